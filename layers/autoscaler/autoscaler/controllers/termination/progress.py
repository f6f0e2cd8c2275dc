"""What one sweep did for each terminating NodeClaim (or Node): the typed result handlers return."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any

from autoscaler.metrics import MetricPoint


class Stage(Enum):
    """Where a termination stands after a step. Every stage but FINISHED is resumed by the next sweep."""

    DRAINING = "Draining"  # pods still have to leave the node
    AWAITING_VOLUME_DETACHMENT = "AwaitingVolumeDetachment"  # drained pods' volumes are still attached
    AWAITING_INSTANCE_TERMINATION = "AwaitingInstanceTermination"  # EC2 still reports the instance running
    AWAITING_NODE_DELETION = "AwaitingNodeDeletion"  # the Node is held by finalizers that are not ours
    FINISHED = "Finished"  # finalizers removed: Kubernetes deletes the objects
    RETRY = "Retry"  # an object changed or vanished under the step; the next sweep reads it again
    FAILED = "Failed"  # an error outlasted the ports' retries; logged, counted, retried by the next sweep
    DEFERRED = "Deferred"  # not started: the invocation was running out of time; the next sweep takes it


class TerminationReason(Enum):
    """How a node's termination ended (the ``reason`` of karpenter_nodes_terminated_total)."""

    DRAINED = "Drained"  # every pod left before any deadline
    GRACE_PERIOD_EXPIRED = "GracePeriodExpired"  # the terminationGracePeriod deadline had come
    INSTANCE_GONE = "InstanceGone"  # the instance vanished under a NotReady node before the drain ended


@dataclass
class Progress:
    nodeclaim: str | None
    node: str | None
    stage: Stage = Stage.DRAINING
    evicted: int = 0
    blocked_by_pdb: int = 0
    deleted_at_deadline: int = 0
    waiting_pods: int = 0
    error: str | None = None
    metrics: list[MetricPoint] = field(default_factory=list)  # what its steps counted and timed

    def as_dict(self) -> dict[str, Any]:
        summary = {**asdict(self), "stage": self.stage.value}
        del summary["metrics"]
        return summary


@dataclass(frozen=True)
class SweepResult:
    progress: tuple[Progress, ...] = ()

    def count(self, stage: Stage) -> int:
        return sum(1 for p in self.progress if p.stage is stage)

    def of(self, name: str) -> Progress | None:
        """The progress of the NodeClaim (or, for a Node without one, the Node) called ``name``."""
        return next((p for p in self.progress if name in (p.nodeclaim, p.node)), None)

    def as_dict(self) -> dict[str, Any]:
        return {
            "terminating": len(self.progress),
            "finished": self.count(Stage.FINISHED),
            "failed": self.count(Stage.FAILED),
            "deferred": self.count(Stage.DEFERRED),
            "progress": [p.as_dict() for p in self.progress],
        }
