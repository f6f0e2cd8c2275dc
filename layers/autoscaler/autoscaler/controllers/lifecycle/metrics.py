"""Lifecycle metrics, with Karpenter's names (``karpenter_nodeclaims_*``, ``karpenter_nodes_created_total``), as
metric points the handler publishes."""

from __future__ import annotations

from collections import Counter
from typing import Final

from autoscaler.metrics import MetricPoint

Dimensions = tuple[tuple[str, str], ...]

# Dimensions: nodepool. One per NodeClaim whose instance was launched (Karpenter up to v0.37 had it).
NODECLAIMS_LAUNCHED: Final = "karpenter_nodeclaims_launched_total"
# Dimensions: nodepool. One per NodeClaim that registered its node.
NODECLAIMS_REGISTERED: Final = "karpenter_nodeclaims_registered_total"
# Dimensions: nodepool. One per NodeClaim whose node initialized.
NODECLAIMS_INITIALIZED: Final = "karpenter_nodeclaims_initialized_total"
# Dimensions: nodepool. One per node that joined (Karpenter counts it at registration).
NODES_CREATED: Final = "karpenter_nodes_created_total"
# Dimensions: reason (insufficient_capacity, nodeclass_not_ready, liveness), nodepool, capacity_type.
NODECLAIMS_DISRUPTED: Final = "karpenter_nodeclaims_disrupted_total"


class Counts:
    """Counts by metric and dimensions, published as one point each."""

    def __init__(self) -> None:
        self._counts: Counter[tuple[str, Dimensions]] = Counter()

    def add(self, name: str, **dimensions: str) -> None:
        self._counts[(name, tuple(sorted(dimensions.items())))] += 1

    def points(self) -> list[MetricPoint]:
        return [MetricPoint(name, float(n), "Count", dims) for (name, dims), n in sorted(self._counts.items())]
