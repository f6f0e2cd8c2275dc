"""Termination λ: drains and terminates deleted NodeClaims and Nodes, one sweep per invocation.

Triggers: NodeClaim / Node events from the in-cluster forwarder (EventBridge -> SQS) and a 1-minute
EventBridge schedule. Both run the same sweep over every terminating NodeClaim: an event only makes it
start sooner, so an event that is lost, late or repeated changes nothing.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any, Literal

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.logging.utils import copy_config_to_registered_loggers
from aws_lambda_powertools.metrics import MetricUnit, single_metric
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.parser.models import EventBridgeModel
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import Field, ValidationError

from autoscaler.controllers.termination import SweepResult, TerminationController
from autoscaler.controllers.termination.metrics import Unit

FORWARDER_SOURCE = "serverless-karpenter.forwarder"
NAMESPACE = os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "ServerlessKarpenter")

logger = Logger(service="termination")
tracer = Tracer(service="termination")
metrics = Metrics(namespace=NAMESPACE, service="termination")
processor = BatchProcessor(event_type=EventType.SQS)
copy_config_to_registered_loggers(source_logger=logger, include={"autoscaler"})


class ClusterObjectEvent(EventBridgeModel):
    """A NodeClaim or Node change put on the bus by the forwarder; only its arrival matters here."""

    source: Literal["serverless-karpenter.forwarder"]
    detail_type: Literal["NodeClaim", "Node"] = Field(alias="detail-type")


class ScheduledEvent(EventBridgeModel):
    source: Literal["aws.events"]
    detail_type: Literal["Scheduled Event"] = Field(alias="detail-type")


class PowertoolsMetricSink:
    """The controllers' MetricSink as CloudWatch embedded metrics, one data point per EMF record so that each
    keeps its own dimensions."""

    _UNITS = {"Count": MetricUnit.Count, "Seconds": MetricUnit.Seconds}

    def emit(self, name: str, value: float, unit: Unit, dimensions: Mapping[str, str]) -> None:
        kept = {key: value for key, value in dimensions.items() if value}  # CloudWatch refuses empty values
        with single_metric(name, self._UNITS[unit], value, namespace=NAMESPACE, default_dimensions=kept):
            pass


def build_controller() -> TerminationController:
    """The controller over the real adapters, from the function's environment (see autoscaler.settings)."""
    raise NotImplementedError("the Kubernetes and AWS adapters are wired in once they land")


# Built on the first invocation and kept while the execution environment lives; tests replace the factory.
controller_factory: Callable[[], TerminationController] = build_controller
_controllers: dict[str, TerminationController] = {}


@tracer.capture_method
def _sweep(context: LambdaContext) -> dict[str, Any]:
    if "default" not in _controllers:
        _controllers["default"] = controller_factory()
    result: SweepResult = _controllers["default"].sweep(lambda: context.get_remaining_time_in_millis() / 1000)
    summary = result.as_dict()
    logger.info("termination sweep", extra={k: summary[k] for k in ("terminating", "finished", "failed")})
    metrics.add_metric("TerminatingNodeClaims", MetricUnit.Count, summary["terminating"])
    return summary


def _record_handler(record: SQSRecord) -> None:
    """Validate one queued cluster event. A malformed one is logged and counted, not retried: a retry
    could never fix it, and the sweep below does the work either way."""
    try:
        event = ClusterObjectEvent.model_validate_json(record.body)
    except ValidationError as error:
        logger.warning(
            "skipped a malformed cluster event", extra={"message_id": record.message_id, "error": str(error)}
        )
        metrics.add_metric("SkippedEvents", MetricUnit.Count, 1)
        return
    logger.debug("cluster event", extra={"kind": event.detail_type, "detail": event.detail})


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    if "Records" in event:
        response = process_partial_response(event, _record_handler, processor, context)
        return {**response, "sweep": _sweep(context)}
    try:
        ScheduledEvent.model_validate(event)
    except ValidationError as error:
        raise ValueError(
            f"termination: expected an SQS batch of cluster events or a scheduled event: {error}"
        ) from error
    return {"sweep": _sweep(context)}
