"""What a garbage collection pass did, and the metrics it reports. Pure.

The metric names are in ``autoscaler.metrics``: Karpenter's ``karpenter_nodeclaims_disrupted_total`` with reason
``garbage_collected``, and ours in the same style. Each pass reports every count, zeros included, so that a
dashboard or alarm sees a continuous series.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Final

from autoscaler import metrics as m
from autoscaler.metrics import MetricPoint

INSTANCE: Final = "Instance"
NODE: Final = "Node"
NODECLAIM: Final = "NodeClaim"
LAUNCH_TEMPLATE: Final = "LaunchTemplate"
INSTANCE_PROFILE: Final = "InstanceProfile"

# One count per kind of resource removed in the pass.
COLLECTED: Final = {
    INSTANCE: m.GC_LEAKED_INSTANCES,  # terminated: no NodeClaim had them
    NODE: m.GC_NODES_DELETED,  # Nodes of those instances
    NODECLAIM: m.GC_NODECLAIMS_DELETED,  # their instance is gone
    LAUNCH_TEMPLATE: m.GC_LAUNCH_TEMPLATES_DELETED,
    INSTANCE_PROFILE: m.GC_INSTANCE_PROFILES_DELETED,
}


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
    demoted: list[str] = field(default_factory=list)  # "<Kind>/<name>" relabelled on-demand (controllers.capacitytype)

    def names(self, resource: str) -> list[str]:
        return [c.name for c in self.collected if c.resource == resource]

    def as_dict(self) -> dict[str, Any]:
        return {
            "skipped": self.skipped,
            "collected": {resource: self.names(resource) for resource in COLLECTED},
            "kept": [{"resource": k.resource, "name": k.name, "reason": k.reason} for k in self.kept],
            "failures": [{"resource": f.resource, "name": f.name, "error": f.error} for f in self.failures],
            "deferred": self.deferred,
            "demoted_to_on_demand": self.demoted,
        }


def metric_points(report: Report) -> list[MetricPoint]:
    if report.skipped:
        return [MetricPoint(m.GC_SKIPPED, 1)]
    counts = Counter(c.resource for c in report.collected)
    points = [MetricPoint(name, counts[resource]) for resource, name in COLLECTED.items()]
    points.append(MetricPoint(m.GC_CAPACITY_TYPE_DEMOTED, len(report.demoted)))
    disrupted = Counter((c.nodepool, c.capacity_type) for c in report.collected if c.resource == NODECLAIM)
    points += [
        MetricPoint(
            m.NODECLAIMS_DISRUPTED,
            count,
            dimensions=(("reason", m.GARBAGE_COLLECTED_REASON), ("nodepool", nodepool), ("capacity_type", capacity)),
        )
        for (nodepool, capacity), count in sorted(disrupted.items())
    ]
    failures = Counter(f.resource for f in report.failures)
    points += [MetricPoint(m.GC_ERRORS, count, dimensions=(("resource", r),)) for r, count in sorted(failures.items())]
    return points
