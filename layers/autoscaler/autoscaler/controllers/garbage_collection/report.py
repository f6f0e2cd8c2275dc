"""What a garbage collection pass did, and the metrics it reports. Pure.

Metric names are Karpenter's where Karpenter has one (``karpenter_nodeclaims_disrupted_total`` with reason
``garbage_collected``); the others are ours, in the same style. Each pass reports every count, zeros
included, so that a dashboard or alarm sees a continuous series.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Final

from autoscaler.metrics import MetricPoint

INSTANCE: Final = "Instance"
NODE: Final = "Node"
NODECLAIM: Final = "NodeClaim"
LAUNCH_TEMPLATE: Final = "LaunchTemplate"
INSTANCE_PROFILE: Final = "InstanceProfile"

# Karpenter's: NodeClaims deleted because their instance is gone; dimensions reason, nodepool, capacity_type.
NODECLAIMS_DISRUPTED: Final = "karpenter_nodeclaims_disrupted_total"
GARBAGE_COLLECTED_REASON: Final = "garbage_collected"
# Ours: one count per kind of resource removed in the pass.
COLLECTED: Final = {
    INSTANCE: "karpenter_garbage_collection_leaked_instances_total",  # terminated: no NodeClaim had them
    NODE: "karpenter_garbage_collection_nodes_deleted_total",  # Nodes of those instances
    NODECLAIM: "karpenter_garbage_collection_nodeclaims_deleted_total",  # their instance is gone
    LAUNCH_TEMPLATE: "karpenter_garbage_collection_launch_templates_deleted_total",
    INSTANCE_PROFILE: "karpenter_garbage_collection_instance_profiles_deleted_total",
}
# Ours: actions or listings that failed (retried by the next pass); dimension resource.
ERRORS: Final = "karpenter_garbage_collection_errors_total"
# Ours: passes that found another pass holding the lease and did nothing.
SKIPPED: Final = "karpenter_garbage_collection_skipped_total"


@dataclass(frozen=True)
class Collected:
    resource: str
    name: str
    reason: str
    nodepool: str = ""
    capacity_type: str = ""


@dataclass(frozen=True)
class Failure:
    resource: str
    name: str
    error: str


@dataclass
class Report:
    skipped: str = ""  # why the pass did nothing
    collected: list[Collected] = field(default_factory=list)
    kept: list[Collected] = field(default_factory=list)  # candidates a last check spared, and why
    failures: list[Failure] = field(default_factory=list)
    deferred: int = 0  # actions left for the next pass because the invocation ran out of time

    def names(self, resource: str) -> list[str]:
        return [c.name for c in self.collected if c.resource == resource]

    def as_dict(self) -> dict[str, Any]:
        return {
            "skipped": self.skipped,
            "collected": {resource: self.names(resource) for resource in COLLECTED},
            "kept": [{"resource": k.resource, "name": k.name, "reason": k.reason} for k in self.kept],
            "failures": [{"resource": f.resource, "name": f.name, "error": f.error} for f in self.failures],
            "deferred": self.deferred,
        }


def metric_points(report: Report) -> list[MetricPoint]:
    if report.skipped:
        return [MetricPoint(SKIPPED, 1)]
    counts = Counter(c.resource for c in report.collected)
    points = [MetricPoint(name, counts[resource]) for resource, name in COLLECTED.items()]
    disrupted = Counter((c.nodepool, c.capacity_type) for c in report.collected if c.resource == NODECLAIM)
    points += [
        MetricPoint(
            NODECLAIMS_DISRUPTED,
            count,
            dimensions=(("reason", GARBAGE_COLLECTED_REASON), ("nodepool", nodepool), ("capacity_type", capacity)),
        )
        for (nodepool, capacity), count in sorted(disrupted.items())
    ]
    failures = Counter(f.resource for f in report.failures)
    points += [MetricPoint(ERRORS, count, dimensions=(("resource", r),)) for r, count in sorted(failures.items())]
    return points
