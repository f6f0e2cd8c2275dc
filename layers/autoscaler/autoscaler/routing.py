"""The functions, which events reach which of them, and how often each sweep runs: shared by the CDK stack, which
creates the functions, rules, queues and schedules, the embedded world, which creates the same ones in moto, and
``autoscaler invoke``. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

# Every function, each ``functions/<name>/handler.py`` exposing ``handler(event, context)``, in the stack's order.
FUNCTIONS: Final = (
    "provisioner",
    "interruption",
    "disruption",
    "termination",
    "garbage_collection",
    "nodeclass",
    "conversion",
)
PROVISIONING_GROUP: Final = "provisioning"  # the provisioning FIFO queue's one message group

# The forwarder's detail-types are "<Kind> <Change>" (docs/events.md). Who gets which:
PROVISIONING_DETAIL_TYPES: Final = (
    "Pod Unschedulable",  # pending pods to place
    "NodePool Created",
    "NodePool Updated",
    "NodeClaim Created",  # launch
    "NodeClaim Updated",
    "NodeClaim Deleted",
    "Node Created",  # registration and initialization
    "Node Updated",
    "Node Deleted",
)
TERMINATION_DETAIL_TYPES: Final = ("NodeClaim Deleting", "Node Deleting")
NODECLASS_DETAIL_TYPES: Final = ("EC2NodeClass Created", "EC2NodeClass Updated", "EC2NodeClass Deleting")
# Not routed: "Pod Capacity Freed" (consolidation runs on the disruption schedule, which reads the cluster anyway),
# "NodePool Deleting/Deleted" (their NodeClaims' own events follow), "EC2NodeClass Deleted" (nothing left to do).

# Rules on the account's default bus that feed the interruption queue: rule name -> (source, detail-type).
INTERRUPTION_RULES: Final[Mapping[str, tuple[str, str]]] = {
    "SpotInterruption": ("aws.ec2", "EC2 Spot Instance Interruption Warning"),
    "RebalanceRecommendation": ("aws.ec2", "EC2 Instance Rebalance Recommendation"),
    "InstanceStateChange": ("aws.ec2", "EC2 Instance State-change Notification"),
    "ScheduledChange": ("aws.health", "AWS Health Event"),
}

# How often each scheduled pass runs, in minutes (every event trigger has a catch-up schedule).
DEFAULT_SCHEDULE_MINUTES: Final[Mapping[str, int]] = {
    "provisioner": 1,
    "termination": 1,
    "disruption": 5,
    "garbage_collection": 2,
    "nodeclass": 5,
}


def bus_name(cluster_name: str) -> str:
    """The custom bus of cluster events, one per cluster."""
    return f"serverless-karpenter-{cluster_name}"
