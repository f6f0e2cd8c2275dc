"""Interruption λ: consumes the interruption queue (EC2 spot interruption warnings, rebalance recommendations,
instance state changes, AWS Health scheduled changes) in SQS batches.

Read the records, let the interruption controller act on the whole batch at once (one cluster read, one action
per instance), and answer the partial batch failures: only records that are not SQS records or met a transient
failure are redelivered. Malformed bodies are dead-lettered by the controller (through the runtime's dead-letter
queue), not retried.
"""

from __future__ import annotations

from autoscaler import runtime
from autoscaler.controllers.interruption import QueuedMessage, metric_points
from autoscaler.events import SqsBatch, SqsRecord
from autoscaler.powertools import Answer, Invocation, powertools

tools = powertools("interruption")


def queued(record: SqsRecord) -> QueuedMessage:
    sent, count = record.attributes.sent_timestamp, record.attributes.approximate_receive_count
    return QueuedMessage(record.message_id, record.body, sent, count, record.event_source_arn)


@tools.handler(SqsBatch, reject="an SQS batch")
def handler(batch: SqsBatch, invocation: Invocation) -> Answer:
    records = tools.records(batch, queued)
    report = runtime.current().controllers.interruption.handle(records.items)
    tools.publish(metric_points(report))  # before a batch that failed whole raises
    response = records.response(*(o.message_id for o in report.outcomes if o.retry))
    retried = len(response["batchItemFailures"])
    logged = {"messages": records.total, "received": dict(report.received_by_kind()), "retried": retried}
    return Answer("interruption batch", response, logged=logged)
