"""Termination λ: drains and terminates deleted NodeClaims and Nodes, one sweep per invocation.

Invoked directly by EventBridge (asynchronously) with the forwarder's ``NodeClaim Deleting`` and
``Node Deleting`` events, and by a 1-minute schedule. Both run the same sweep over every terminating
NodeClaim: an event only makes it start sooner, so a lost, late or repeated event changes nothing.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Literal

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.logging.utils import copy_config_to_registered_loggers
from aws_lambda_powertools.metrics import MetricUnit, single_metric
from aws_lambda_powertools.utilities.parser.models import EventBridgeModel
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel, Field, ValidationError

from autoscaler import metrics as shared_metrics
from autoscaler.controllers.termination import Stage, TerminationController, utc_now
from autoscaler.controllers.termination.metrics import Unit

SERVICE = os.environ.get("POWERTOOLS_SERVICE_NAME", "termination")
NAMESPACE = os.environ.get("POWERTOOLS_METRICS_NAMESPACE", shared_metrics.NAMESPACE)

logger = Logger(service=SERVICE)
tracer = Tracer(service=SERVICE)
metrics = Metrics(namespace=NAMESPACE, service=SERVICE)
copy_config_to_registered_loggers(source_logger=logger, include={"autoscaler"})


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


class ScheduledEvent(EventBridgeModel):
    source: Literal["aws.events"]
    detail_type: Literal["Scheduled Event"] = Field(alias="detail-type")


class PowertoolsMetricSink:
    """The controllers' MetricSink as CloudWatch embedded metrics: one EMF record per data point, so that
    each keeps its own dimensions (plus ``service``, as Powertools Metrics adds to the others)."""

    _UNITS = {"Count": MetricUnit.Count, "Seconds": MetricUnit.Seconds}

    def emit(self, name: str, value: float, unit: Unit, dimensions: Mapping[str, str]) -> None:
        kept = {shared_metrics.SERVICE_DIMENSION: SERVICE, **{k: v for k, v in dimensions.items() if v}}
        with single_metric(name, self._UNITS[unit], value, namespace=NAMESPACE, default_dimensions=kept):
            pass  # CloudWatch refuses empty dimension values: those are left out above


def build_controller(clock: Callable[[], datetime] = utc_now) -> TerminationController:
    """The controller over the real adapters, configured from the environment (``autoscaler.settings``).

    The cloud provider gets no EC2NodeClass lookup: termination only asks whether an instance is still
    there, and without a class the provider skips the instance-type details (DescribeInstanceTypes and
    prices, which this function may not call)."""
    from autoscaler.kube.connect import cluster_from_environment
    from autoscaler.providers.aws.provider import AWSCloudProvider
    from autoscaler.settings import Settings

    settings = Settings.from_env()
    cloud = AWSCloudProvider(settings, lambda _name: None, clock=clock)
    cluster = cluster_from_environment(settings)
    return TerminationController(cluster, cloud, clock=clock, metrics=PowertoolsMetricSink())


# Built on the first invocation and kept while the execution environment lives; tests replace the factory.
controller_factory: Callable[[], TerminationController] = build_controller
_controllers: dict[str, TerminationController] = {}


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
        logger.warning("skipped an event that is neither scheduled nor a cluster event", extra={"error": str(error)})
        return None
    return f"{cluster_event.detail_type} {cluster_event.detail.object.name}"


@tracer.capture_method
def _sweep(context: LambdaContext) -> dict[str, Any]:
    if "default" not in _controllers:
        _controllers["default"] = controller_factory()
    result = _controllers["default"].sweep(lambda: context.get_remaining_time_in_millis() / 1000)
    summary = result.as_dict()
    logger.info("termination sweep", extra={k: summary[k] for k in ("terminating", "finished", "failed", "deferred")})
    released = sum(1 for p in result.progress if p.stage is Stage.FINISHED and p.nodeclaim)
    metrics.add_metric(shared_metrics.NODECLAIMS_TERMINATED, MetricUnit.Count, released)
    return summary


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    trigger = _trigger(event)
    if trigger is None:
        # Not retried: asynchronous retries of an event we cannot read would fail the same way.
        metrics.add_metric("SkippedEvents", MetricUnit.Count, 1)
        return {"skipped": True}
    logger.info("triggered", extra={"trigger": trigger})
    return {"trigger": trigger, "sweep": _sweep(context)}
