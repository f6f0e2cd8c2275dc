"""Garbage collection λ: every 2 minutes (an EventBridge schedule), one pass that terminates instances no NodeClaim
accounts for, deletes NodeClaims whose instance is gone, and deletes launch templates and instance profiles no
EC2NodeClass uses any more (docs/garbage-collection.md).

Thin: check the event, run the controller over this container's adapters under the garbage collection lease
(so two passes never overlap), publish its metrics, return its report.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import ValidationError

from autoscaler import runtime
from autoscaler.controllers.garbage_collection import GarbageCollector, metric_points
from autoscaler.runtime import ScheduledEvent

tools = runtime.powertools("garbage_collection")
logger, tracer, metrics = tools.logger, tools.tracer, tools.metrics


def collector(rt: runtime.Runtime) -> GarbageCollector:
    cloud = rt.cloud
    return GarbageCollector(
        rt.cluster, cloud, cloud.launch_templates, cloud.instance_profiles, rt.leases, clock=rt.clock
    )


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    try:
        ScheduledEvent.model_validate(event)
    except ValidationError as error:
        tools.skip("not an EventBridge scheduled event", error=str(error)[:512])
        return {"skipped": "not an EventBridge scheduled event"}
    report = collector(runtime.current()).run(
        context.aws_request_id, lambda: context.get_remaining_time_in_millis() / 1000
    )
    tools.publish(metric_points(report))
    summary = report.as_dict()
    logger.info("garbage collection pass", extra=summary)
    return summary
