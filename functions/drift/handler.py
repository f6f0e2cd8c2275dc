"""Drift λ: every 5 minutes (an EventBridge schedule), one disruption pass (docs/disruption.md): NodeClaim drift and
consolidation conditions, expiration, the commands earlier passes started, then at most one new command (drift,
emptiness, multi-node or single-node consolidation) within the NodePools' disruption budgets.

Thin: check the event, run the controller over this container's adapters under the disruption lease (so two
passes never spend one budget twice), publish its metrics, return its summary.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import ValidationError

from autoscaler import runtime
from autoscaler.controllers.disruption import DisruptionController
from autoscaler.controllers.state import NodeClassIndex
from autoscaler.providers.aws.provider import AWSCloudProvider
from autoscaler.runtime import ScheduledEvent

tools = runtime.powertools("drift")
logger, tracer, metrics = tools.logger, tools.tracer, tools.metrics


def build(rt: runtime.Runtime, instance_type_names: Sequence[str] = ()) -> DisruptionController:
    """The controller over this container's adapters; its cloud provider reads EC2NodeClasses from the pass's own
    read of the cluster rather than once per NodeClaim. ``instance_type_names`` limits the catalogue (local runs)."""
    nodeclasses = NodeClassIndex()
    cloud = AWSCloudProvider(
        rt.settings,
        nodeclasses.get,
        clients=rt.cloud.clients,
        unavailable=rt.cloud.unavailable,
        instance_type_names=instance_type_names,
        clock=rt.clock,
    )
    return DisruptionController(
        rt.cluster,
        cloud,
        cloud.unavailable,
        clock=rt.clock,
        leases=rt.leases,
        nodeclasses=nodeclasses,
        spot_to_spot=rt.settings.spot_to_spot_consolidation,
    )


# Built on the first invocation for this container's runtime; local runs and tests replace the factory.
factory: Callable[[runtime.Runtime], DisruptionController] = build
_built: dict[int, DisruptionController] = {}


def _controller() -> DisruptionController:
    rt = runtime.current()
    if id(rt) not in _built:  # a warm container keeps the provider's caches (catalog, prices, AMIs)
        _built.clear()
        _built[id(rt)] = factory(rt)
    return _built[id(rt)]


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    try:
        ScheduledEvent.model_validate(event)
    except ValidationError as error:
        tools.skip("not an EventBridge scheduled event", error=str(error)[:512])
        return {"skipped": "not an EventBridge scheduled event"}
    result = _controller().run(context.aws_request_id, lambda: context.get_remaining_time_in_millis() / 1000)
    if result is None:
        return {"skipped": "another disruption pass holds the lease"}
    tools.publish(result.metric_points())
    summary = result.summary()
    logger.info("disruption pass", extra=summary)
    return summary
