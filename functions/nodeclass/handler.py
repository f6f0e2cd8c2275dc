"""Nodeclass λ: EC2NodeClass status (subnets, security groups, AMIs, instance profile), drift hashes and the
termination finalizer, on the forwarder's ``EC2NodeClass Created/Updated/Deleting`` events (EventBridge invokes
the function directly) and on a 5-minute schedule that catches whatever an event missed.

Parse the event, reconcile every EC2NodeClass (the adapters' caches survive warm invocations), answer the
outcomes. An event only makes a pass start sooner: each pass reads every class from the cluster, so a lost,
late or repeated event changes nothing.
"""

from __future__ import annotations

from dataclasses import asdict

from autoscaler import runtime
from autoscaler.controllers.nodeclass import metric_points
from autoscaler.events import NodeClassEvent, ScheduledEvent
from autoscaler.powertools import Answer, Invocation, Skip, powertools

tools = powertools("nodeclass")


@tools.handler(NodeClassEvent | ScheduledEvent, skip="neither an EC2NodeClass event nor a scheduled event")
def handler(event: NodeClassEvent | ScheduledEvent, invocation: Invocation) -> Answer | Skip:
    rt = runtime.current()
    if isinstance(event, NodeClassEvent) and event.detail.cluster != rt.settings.cluster_name:
        return Skip("an event of another cluster", {"cluster": event.detail.cluster[:256]})
    outcomes = rt.controllers.nodeclass.reconcile_all()
    answer = {"trigger": event.detail_type, "outcomes": [asdict(o) for o in outcomes]}
    return Answer("nodeclass pass", answer, metric_points(outcomes))
