"""The lifecycle's metric points (names in ``autoscaler.metrics``: Karpenter's ``karpenter_nodeclaims_*`` and
``karpenter_nodes_created_total``), counted per metric and dimensions."""

from __future__ import annotations

from collections import Counter

from autoscaler.metrics import Dimensions, MetricPoint


class Counts:
    """Counts by metric and dimensions, published as one point each."""

    def __init__(self) -> None:
        self._counts: Counter[tuple[str, Dimensions]] = Counter()

    def add(self, name: str, **dimensions: str) -> None:
        self._counts[(name, tuple(sorted(dimensions.items())))] += 1

    def points(self) -> list[MetricPoint]:
        return [MetricPoint(name, float(n), "Count", dims) for (name, dims), n in sorted(self._counts.items())]
