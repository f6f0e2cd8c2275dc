"""Reading metrics in tests: the points controllers return, and the EMF records handlers print."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from autoscaler.metrics import MetricPoint


def total(points: Iterable[MetricPoint], name: str, **dimensions: str) -> float:
    """Sum of the values of ``name`` whose dimensions include ``dimensions``."""
    return sum(p.value for p in points if p.name == name and dimensions.items() <= dict(p.dimensions).items())


def emf_records(output: str) -> list[dict[str, Any]]:
    """The embedded-metric-format records among the lines a handler printed."""
    return [json.loads(line) for line in output.splitlines() if line.startswith("{") and '"_aws"' in line]


def metric_values(records: Iterable[Mapping[str, Any]], name: str, **dimensions: str) -> list[float]:
    """Every value of ``name`` in records whose dimensions include ``dimensions``."""
    values: list[float] = []
    for record in records:
        if name in record and all(record.get(k) == v for k, v in dimensions.items()):
            value = record[name]
            values += value if isinstance(value, list) else [value]
    return values


def emitted(output: str) -> dict[str, float]:
    """Metric name -> sum of its values over the EMF records printed, dimensions other than ``service`` folded
    into the name as ``name[key=value,...]``."""
    sums: dict[str, float] = {}
    for record in emf_records(output):
        for directive in record["_aws"]["CloudWatchMetrics"]:
            extra = sorted({k for dims in directive["Dimensions"] for k in dims if k != "service"})
            for metric in directive["Metrics"]:
                key = metric["Name"] + (f"[{','.join(f'{k}={record[k]}' for k in extra)}]" if extra else "")
                sums[key] = sums.get(key, 0) + sum(metric_values([record], metric["Name"]))
    return sums
