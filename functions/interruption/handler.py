"""Interruption function: consumes the interruption queue (EC2 spot interruption warnings, rebalance
recommendations, instance state changes, AWS Health scheduled changes) in SQS batches.

Parse the SQS records, let the interruption controller act on the whole batch at once (one cluster read,
one action per instance), publish its metrics, and report partial batch failures: only records that met a
transient failure are redelivered. Malformed records are dead-lettered by the controller, not retried.
"""

from __future__ import annotations

import os
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.logging.utils import copy_config_to_registered_loggers
from aws_lambda_powertools.metrics import MetricUnit, single_metric
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.parser.models import SqsRecordModel
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import ValidationError

from autoscaler import metrics as metrics_names
from autoscaler.controllers.interruption import InterruptionController, QueuedMessage, metric_points
from autoscaler.controllers.interruption.report import BatchReport
from autoscaler.settings import Settings

SERVICE = "interruption"
NAMESPACE = os.environ.get("POWERTOOLS_METRICS_NAMESPACE", metrics_names.NAMESPACE)

logger = Logger(service=SERVICE)
tracer = Tracer(service=SERVICE)
metrics = Metrics(namespace=NAMESPACE, service=SERVICE)
processor = BatchProcessor(event_type=EventType.SQS, model=SqsRecordModel)
copy_config_to_registered_loggers(source_logger=logger, include={"autoscaler"})  # the controller's logs as JSON


class _Container:
    """What a warm Lambda container keeps between invocations."""

    controller: InterruptionController | None = None


_warm = _Container()


class RetryLater(Exception):
    """Raised for a record the controller could not finish: SQS redelivers it after the visibility timeout."""


def build_controller(settings: Settings) -> InterruptionController:
    """The controller over the real adapters (imported here, on the first invocation: their clients are costly)."""
    from autoscaler.kube.connect import cluster_from_environment
    from autoscaler.providers.aws.clients import AWSClients
    from autoscaler.providers.aws.deadletters import SqsDeadLetters
    from autoscaler.providers.aws.unavailable import DynamoDBUnavailableOfferings

    clients = AWSClients(settings.region)
    dead_letters = SqsDeadLetters(clients, settings.interruption_dlq_url) if settings.interruption_dlq_url else None
    offerings = DynamoDBUnavailableOfferings(clients, settings.state_table_name)
    return InterruptionController(cluster_from_environment(settings), offerings, dead_letters)


def controller() -> InterruptionController:
    """One controller per container, so that warm invocations reuse its cluster index and clients."""
    if _warm.controller is None:
        _warm.controller = build_controller(Settings.from_env())
    return _warm.controller


def use_controller(replacement: InterruptionController | None) -> None:
    """Install a controller (local runs, tests); None builds the real one again on the next invocation."""
    _warm.controller = replacement


def _queued(record: SqsRecordModel) -> QueuedMessage:
    return QueuedMessage(
        message_id=record.messageId,
        body=str(record.body),
        sent_at=record.attributes.SentTimestamp,
        receive_count=int(record.attributes.ApproximateReceiveCount or 1),
        source=record.eventSourceARN,
    )


def _publish(report: BatchReport) -> None:
    for point in metric_points(report):
        unit = MetricUnit(point.unit)
        if not point.dimensions:
            for value in point.values:
                metrics.add_metric(name=point.name, unit=unit, value=value)
            continue
        with single_metric(
            name=point.name,
            unit=unit,
            value=point.values[0],
            namespace=NAMESPACE,
            default_dimensions={"service": SERVICE},
        ) as metric:
            for key, value in point.dimensions:
                metric.add_dimension(name=key, value=value)


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    batch = []
    for raw in event.get("Records") or ():
        try:
            batch.append(_queued(SqsRecordModel.model_validate(raw)))
        except ValidationError as error:  # the processor below fails it too, so SQS's redrive policy moves it
            logger.error("not an SQS record", extra={"message_id": raw.get("messageId"), "error": str(error)})
    report = controller().handle(batch)
    _publish(report)
    failures = {o.message_id: o.reason for o in report.outcomes if o.retry}

    def record_handler(record: SqsRecordModel) -> str:
        if record.messageId in failures:
            raise RetryLater(failures[record.messageId])
        return record.messageId

    return process_partial_response(event=event, record_handler=record_handler, processor=processor, context=context)
