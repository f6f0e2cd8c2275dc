"""Termination: Karpenter's node and NodeClaim termination as a sweep any invocation can advance.

``drain`` and ``pods`` decide (pure); ``controller`` applies the decisions through the Cluster and
CloudProvider ports; ``instance`` and ``nodes`` hold what garbage collection reuses.
"""

from autoscaler.controllers.termination.controller import TerminationController
from autoscaler.controllers.termination.deadline import TerminationError, termination_deadline
from autoscaler.controllers.termination.drain import DrainPlan, PodDeletion, blocking_volume_attachments, plan_drain
from autoscaler.controllers.termination.instance import InstanceState, ensure_instance_terminating, observe_instance
from autoscaler.controllers.termination.metrics import metric_points
from autoscaler.controllers.termination.pairs import TerminatingPair, terminating_pairs
from autoscaler.controllers.termination.pods import DrainGroup, PodRef
from autoscaler.controllers.termination.progress import Progress, Stage, SweepResult, TerminationReason

__all__ = [
    "DrainGroup",
    "DrainPlan",
    "InstanceState",
    "PodDeletion",
    "PodRef",
    "Progress",
    "Stage",
    "SweepResult",
    "TerminatingPair",
    "TerminationController",
    "TerminationError",
    "TerminationReason",
    "blocking_volume_attachments",
    "ensure_instance_terminating",
    "metric_points",
    "observe_instance",
    "plan_drain",
    "terminating_pairs",
    "termination_deadline",
]
