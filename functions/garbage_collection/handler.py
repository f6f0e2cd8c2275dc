"""Garbage collection λ: every 2 minutes (an EventBridge schedule), one pass that terminates instances no NodeClaim
accounts for, deletes NodeClaims whose instance is gone, and deletes launch templates and instance profiles no
EC2NodeClass uses any more (docs/garbage-collection.md).

Parse the schedule's event, run the collector under the garbage collection lease (so two passes never overlap),
answer its report.
"""

from __future__ import annotations

from autoscaler import runtime
from autoscaler.controllers.garbage_collection import metric_points
from autoscaler.events import ScheduledEvent
from autoscaler.powertools import Answer, Invocation, powertools

tools = powertools("garbage_collection")


@tools.handler(ScheduledEvent, skip="not an EventBridge scheduled event")
def handler(event: ScheduledEvent, invocation: Invocation) -> Answer:
    report = runtime.current().controllers.garbage_collection.run(invocation.request_id, invocation.time_left)
    return Answer("garbage collection pass", report.as_dict(), metric_points(report))
