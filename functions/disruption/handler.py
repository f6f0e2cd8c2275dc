"""Disruption λ: every 5 minutes (an EventBridge schedule), one disruption pass (docs/disruption.md): NodeClaim drift
and consolidation conditions, expiration, the commands earlier passes started, then at most one new command
(drift, emptiness, multi-node or single-node consolidation) within the NodePools' disruption budgets.

Parse the schedule's event, run the controller under the disruption lease (so two passes never spend one budget
twice), answer its summary.
"""

from __future__ import annotations

from autoscaler import runtime
from autoscaler.events import ScheduledEvent
from autoscaler.powertools import Answer, Invocation, powertools

tools = powertools("disruption")


@tools.handler(ScheduledEvent, skip="not an EventBridge scheduled event")
def handler(event: ScheduledEvent, invocation: Invocation) -> Answer:
    result = runtime.current().controllers.disruption.run(invocation.request_id, invocation.time_left)
    if result is None:
        return Answer("disruption pass", {"skipped": "another disruption pass holds the lease"})
    return Answer("disruption pass", result.summary(), result.metric_points())
