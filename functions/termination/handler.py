"""Termination λ: drains and terminates deleted NodeClaims and Nodes, one sweep per invocation.

Invoked directly by EventBridge (asynchronously) with the forwarder's ``NodeClaim Deleting`` and
``Node Deleting`` events, and by a 1-minute schedule. Both run the same sweep over every terminating
NodeClaim: an event only makes it start sooner, so a lost, late or repeated event changes nothing.

Thin: check the event, sweep with this container's adapters, publish the sweep's metrics, return its summary.
The runtime's cloud provider reads no EC2NodeClass: termination only asks whether an instance is still there,
so it needs neither the class nor the instance-type catalog (DescribeInstanceTypes and prices).
"""

from __future__ import annotations

from typing import Any, Literal

from aws_lambda_powertools.utilities.parser.models import EventBridgeModel
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel, Field, ValidationError

from autoscaler import runtime
from autoscaler.controllers.termination import TerminationController, metric_points
from autoscaler.runtime import ScheduledEvent

tools = runtime.powertools("termination")
logger, tracer, metrics = tools.logger, tools.tracer, tools.metrics


class ObjectReference(BaseModel):
    kind: str
    name: str


class ClusterEventDetail(BaseModel):
    """The forwarder's ``detail`` (docs/events.md); only what the log line needs is read."""

    version: Literal["1"]
    change: str
    object: ObjectReference


class ClusterEvent(EventBridgeModel):
    source: Literal["serverless-karpenter.forwarder"]
    detail_type: str = Field(alias="detail-type")
    detail: ClusterEventDetail


def _trigger(event: dict[str, Any]) -> str | None:
    """What invoked us ("schedule" or "<Kind> <Change> <name>"), or None for an event we do not take."""
    try:
        ScheduledEvent.model_validate(event)
        return "schedule"
    except ValidationError:
        pass
    try:
        cluster_event = ClusterEvent.model_validate(event)
    except ValidationError as error:
        tools.skip("neither a scheduled nor a cluster event", error=str(error)[:512])
        return None
    return f"{cluster_event.detail_type} {cluster_event.detail.object.name}"


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    trigger = _trigger(event)
    if trigger is None:
        return {"skipped": True}
    logger.info("triggered", extra={"trigger": trigger})
    rt = runtime.current(read_nodeclasses=False)
    result = TerminationController(rt.cluster, rt.cloud, clock=rt.clock).sweep(
        lambda: context.get_remaining_time_in_millis() / 1000
    )
    tools.publish(metric_points(result))
    summary = result.as_dict()
    logger.info("termination sweep", extra={k: summary[k] for k in ("terminating", "finished", "failed", "deferred")})
    return {"trigger": trigger, "sweep": summary}
