"""Karpenter's scheduling simulation, pure: which pods fit existing capacity, which NodeClaims to launch.

Entry point: ``Scheduler(ClusterSnapshot(...)).solve(pods) -> SchedulingResult``; check any result with
``validate(snapshot, pods, result)``. No AWS SDK, Kubernetes client or Lambda runtime is imported here.
"""

from autoscaler.scheduling.pods import PodRef
from autoscaler.scheduling.requirements import Requirement, Requirements
from autoscaler.scheduling.result import (
    InstanceTypeOption,
    NewNodeClaim,
    Placement,
    PodError,
    Rejection,
    SchedulingResult,
)
from autoscaler.scheduling.scheduler import Scheduler, SchedulerOptions
from autoscaler.scheduling.snapshot import ClusterSnapshot

__all__ = [
    "ClusterSnapshot",
    "InstanceTypeOption",
    "NewNodeClaim",
    "Placement",
    "PodError",
    "PodRef",
    "Rejection",
    "Requirement",
    "Requirements",
    "Scheduler",
    "SchedulerOptions",
    "SchedulingResult",
]
