"""The functions, which events reach which of them, and how often each sweep runs: shared by the CDK stack, which
creates the functions, rules, queues and schedules, the embedded world, which creates the same ones in moto, and
``autoscaler invoke``. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
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
    # An interruptible capacity reservation reclaimed by its owner (Karpenter v1.14's CapacityReservationInterruption).
    "CapacityReservationInterruption": ("aws.ec2", "EC2 Capacity Reservation Instance Interruption Warning"),
}

# How often each scheduled pass runs, in minutes (every event trigger has a catch-up schedule).
DEFAULT_SCHEDULE_MINUTES: Final[Mapping[str, int]] = {
    "provisioner": 1,
    "termination": 1,
    "disruption": 5,
    "garbage_collection": 2,
    "nodeclass": 5,
}


@dataclass(frozen=True)
class Redelivery:
    """How a queue gives back what its function did not acknowledge (a failed record, or a whole batch whose
    invocation failed, timed out or crashed): hidden for ``visibility_seconds`` after each receive, then delivered
    again, and moved to the dead-letter queue on the receive after ``max_receives``."""

    visibility_seconds: int
    max_receives: int


# Interruption: a spot warning gives two minutes, so a batch whose invocation died must come back in seconds, not
# after Lambda's suggested six function timeouts (the throttled receives that guidance guards against do not happen
# under the event source's maximum concurrency). 30 s is the function's 20 s timeout and a margin (Lambda refuses a
# visibility shorter than the timeout); eight receives keep a warning retried for four minutes, through a
# two-minute API server outage, within the queue's 300 s retention.
INTERRUPTION_REDELIVERY: Final = Redelivery(visibility_seconds=30, max_receives=8)
# Provisioning: one FIFO message group, so a message in flight holds up every trigger behind it, the sweeps
# included. The provisioner's 120 s timeout and a margin: a pass that is cut off costs provisioning 150 s, not the
# 12 minutes of six timeouts.
PROVISIONING_REDELIVERY: Final = Redelivery(visibility_seconds=150, max_receives=3)


def bus_name(cluster_name: str) -> str:
    """The custom bus of cluster events, one per cluster."""
    return f"serverless-karpenter-{cluster_name}"
