"""Termination λ: drains and terminates deleted NodeClaims and Nodes, one sweep per invocation.

Invoked directly by EventBridge (asynchronously) with the forwarder's ``NodeClaim Deleting`` and
``Node Deleting`` events, and by a 1-minute schedule. Both run the same sweep over every terminating
NodeClaim: an event only makes it start sooner, so a lost, late or repeated event changes nothing.

Parse the event, sweep, answer the sweep's summary. The runtime's cloud provider reads no EC2NodeClass here:
termination only asks whether an instance is still there, so it needs neither the class nor the instance-type
catalog (DescribeInstanceTypes and prices).
"""

from __future__ import annotations

from autoscaler import runtime
from autoscaler.controllers.termination import metric_points
from autoscaler.events import ClusterEvent, ScheduledEvent
from autoscaler.powertools import Answer, Invocation, powertools

tools = powertools("termination")
LOGGED = ("terminating", "finished", "failed", "deferred")


@tools.handler(
    ScheduledEvent | ClusterEvent,
    skip="neither a scheduled nor a cluster event",
    skipped={"skipped": True},  # EventBridge, the only caller, discards the answer
)
def handler(event: ScheduledEvent | ClusterEvent, invocation: Invocation) -> Answer:
    trigger = "schedule" if isinstance(event, ScheduledEvent) else f"{event.detail_type} {event.detail.object.name}"
    result = runtime.current().controllers.termination.sweep(invocation.time_left)
    summary = result.as_dict()
    logged = {"trigger": trigger, **{key: summary[key] for key in LOGGED}}
    return Answer("termination sweep", {"trigger": trigger, "sweep": summary}, metric_points(result), logged)
