"""docs/observability.md and autoscaler.metrics list the same metrics, each once, with the unit its name says."""

from __future__ import annotations

import re
from pathlib import Path

from autoscaler import metrics

DOC = Path(__file__).parents[2] / "docs" / "observability.md"
ROW = re.compile(r"^\| `(karpenter_[a-z0-9_]+)` \| (\w+) \|", re.MULTILINE)


def documented() -> dict[str, str]:
    """Metric name -> unit, from the rows of the metric tables (the renames table has no unit column)."""
    rows = ROW.findall(DOC.read_text())
    names = [name for name, _ in rows]
    assert len(names) == len(set(names)), "a metric is documented twice"
    return dict(rows)


def defined() -> set[str]:
    return {
        value
        for name, value in vars(metrics).items()
        if name.isupper() and isinstance(value, str) and value.startswith("karpenter_")
    }


def test_every_metric_is_documented_and_every_documented_metric_exists() -> None:
    assert set(documented()) == defined()


def test_names_follow_the_convention_and_say_their_unit() -> None:
    for name, unit in documented().items():
        assert re.fullmatch(r"karpenter_[a-z0-9]+(_[a-z0-9]+)+", name), name
        expected = "Count"
        if name.endswith("_seconds"):
            expected = "Seconds"
        elif name.endswith("_dollars_per_hour"):  # a price: EMF has no unit for money
            expected = "None"
        assert unit == expected, name
