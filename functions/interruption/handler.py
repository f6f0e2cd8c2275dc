"""Interruption function: consumes the interruption queue (EC2 spot interruption warnings, rebalance
recommendations, instance state changes, AWS Health scheduled changes) in SQS batches.

Parse the SQS records, let the interruption controller act on the whole batch at once (one cluster read,
one action per instance), publish its metrics, and report partial batch failures: only records that met a
transient failure are redelivered. Malformed records are dead-lettered by the controller (through the
runtime's dead-letter queue), not retried.
"""

from __future__ import annotations

import functools
from typing import Any

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.parser.models import SqsRecordModel
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import ValidationError

from autoscaler import runtime
from autoscaler.controllers.interruption import InterruptionController, QueuedMessage, metric_points

tools = runtime.powertools("interruption")
logger, tracer, metrics = tools.logger, tools.tracer, tools.metrics
processor = BatchProcessor(event_type=EventType.SQS, model=SqsRecordModel)


class RetryLater(Exception):
    """Raised for a record the controller could not finish: SQS redelivers it after the visibility timeout."""


@functools.lru_cache(maxsize=1)
def controller(rt: runtime.Runtime) -> InterruptionController:
    """One controller per runtime, so that a warm container's batches reuse its cluster index and workers."""
    return InterruptionController(rt.cluster, rt.unavailable, rt.dead_letters, clock=rt.clock)


def _queued(record: SqsRecordModel) -> QueuedMessage:
    return QueuedMessage(
        message_id=record.messageId,
        body=str(record.body),
        sent_at=record.attributes.SentTimestamp,
        receive_count=int(record.attributes.ApproximateReceiveCount or 1),
        source=record.eventSourceARN,
    )


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
    report = controller(runtime.current()).handle(batch)
    tools.publish(metric_points(report))
    failures = {o.message_id: o.reason for o in report.outcomes if o.retry}

    def record_handler(record: SqsRecordModel) -> str:
        if record.messageId in failures:
            raise RetryLater(failures[record.messageId])
        return record.messageId

    return process_partial_response(event=event, record_handler=record_handler, processor=processor, context=context)
