"""Termination metrics: Karpenter's metric names where Karpenter has one, and the port they go through.

The handler backs :class:`MetricSink` with CloudWatch embedded metrics (Powertools); tests with a list.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final, Literal, Protocol

Unit = Literal["Count", "Seconds"]

# Nodes whose termination finalizer we removed; dimensions nodepool and reason (TerminationReason).
NODES_TERMINATED: Final = "karpenter_nodes_terminated_total"
# From the Node's deletionTimestamp to the removal of its finalizer; dimension nodepool.
NODE_TERMINATION_DURATION: Final = "karpenter_nodes_termination_duration_seconds"
# NodeClaims whose termination finalizer we removed; dimensions nodepool and capacity_type.
NODECLAIMS_TERMINATED: Final = "karpenter_nodeclaims_terminated_total"
# From the NodeClaim's deletionTimestamp to the removal of its finalizer; dimension nodepool.
NODECLAIM_TERMINATION_DURATION: Final = "karpenter_nodeclaims_termination_duration_seconds"
# From the InstanceTerminating condition to the instance shutting down; dimension nodepool.
INSTANCE_TERMINATION_DURATION: Final = "karpenter_nodeclaims_instance_termination_duration_seconds"
# Eviction API calls; dimension code: 200 evicted, 429 blocked by a PodDisruptionBudget, 404 pod gone.
EVICTION_REQUESTS: Final = "karpenter_nodes_eviction_requests_total"
# Ours, no Karpenter counterpart: pods deleted because the terminationGracePeriod deadline came.
PODS_DELETED_AT_DEADLINE: Final = "karpenter_pods_deleted_at_termination_deadline_total"
# Ours: steps that failed and will be retried by the next invocation; dimension error (the error's type).
TERMINATION_ERRORS: Final = "karpenter_termination_errors_total"


class MetricSink(Protocol):
    def emit(self, name: str, value: float, unit: Unit, dimensions: Mapping[str, str]) -> None:
        """Record one data point. Must not raise: a lost data point is never worth failing a step."""
        ...


@dataclass(frozen=True)
class DataPoint:
    name: str
    value: float
    unit: Unit
    dimensions: Mapping[str, str]


@dataclass
class RecordingMetricSink:
    """Keeps every data point in memory: for tests and for summaries."""

    points: list[DataPoint] = field(default_factory=list)

    def emit(self, name: str, value: float, unit: Unit, dimensions: Mapping[str, str]) -> None:
        self.points.append(DataPoint(name, value, unit, dict(dimensions)))

    def total(self, name: str, **dimensions: str) -> float:
        """Sum of the values of ``name`` whose dimensions include ``dimensions``."""
        return sum(
            p.value
            for p in self.points
            if p.name == name and all(p.dimensions.get(k) == v for k, v in dimensions.items())
        )


class DiscardingMetricSink:
    def emit(self, name: str, value: float, unit: Unit, dimensions: Mapping[str, str]) -> None:
        return None
