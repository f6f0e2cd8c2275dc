"""Nodeclass λ: EC2NodeClass status (subnets, security groups, AMIs, instance profile), drift hashes and the
termination finalizer, on the forwarder's ``EC2NodeClass Created/Updated/Deleting`` events (EventBridge invokes
the function directly) and on a 5-minute schedule that catches whatever an event missed.

Thin: check the event, reconcile every EC2NodeClass with this container's adapters (their caches survive warm
invocations), publish the outcome counts, return the outcomes. An event only makes a pass start sooner: each
pass reads every class from the cluster, so a lost, late or repeated event changes nothing.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, Literal

from aws_lambda_powertools.utilities.parser.models import EventBridgeModel
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel, Field, ValidationError

from autoscaler import runtime
from autoscaler.controllers.nodeclass import NodeClassController, metric_points
from autoscaler.runtime import ScheduledEvent

tools = runtime.powertools("nodeclass")
logger, tracer, metrics = tools.logger, tools.tracer, tools.metrics


class ClusterEventDetail(BaseModel):
    cluster: str


class NodeClassEvent(EventBridgeModel):
    """A change the forwarder saw (docs/events.md); which class it names does not matter to a full pass."""

    source: Literal["serverless-karpenter.forwarder"]
    detail_type: Literal["EC2NodeClass Created", "EC2NodeClass Updated", "EC2NodeClass Deleting"] = Field(
        alias="detail-type"
    )
    detail: ClusterEventDetail  # type: ignore[assignment]


def _skip(reason: str, **extra: Any) -> dict[str, Any]:
    tools.skip(reason, **extra)
    return {"skipped": reason}


def _trigger(event: dict[str, Any]) -> EventBridgeModel:
    try:
        return NodeClassEvent.model_validate(event)
    except ValidationError:
        return ScheduledEvent.model_validate(event)


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    try:
        trigger = _trigger(event)
    except ValidationError as error:
        return _skip("neither an EC2NodeClass event nor a scheduled event", error=str(error)[:512])
    rt = runtime.current()
    if isinstance(trigger, NodeClassEvent) and trigger.detail.cluster != rt.settings.cluster_name:
        return _skip("an event of another cluster", cluster=trigger.detail.cluster[:256])
    outcomes = NodeClassController(rt.cluster, rt.cloud.resolver, clock=rt.clock).reconcile_all()
    tools.publish(metric_points(outcomes))
    answer = {"trigger": trigger.detail_type, "outcomes": [asdict(o) for o in outcomes]}
    logger.info("nodeclass pass", extra=answer)
    return answer
