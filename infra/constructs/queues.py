"""SQS queues the way every queue here is made: encrypted, TLS-only, with a dead-letter queue."""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_sqs as sqs
from constructs import Construct

DLQ_RETENTION = Duration.days(14)  # longer than any source queue's: a standard DLQ keeps the original enqueue time


class QueueWithDeadLetters(Construct):
    """A queue and its dead-letter queue (FIFO when the queue is)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        retention: Duration,
        visibility_timeout: Duration,
        max_receive_count: int,
        fifo: bool = False,
    ) -> None:
        super().__init__(scope, construct_id)
        self.dead_letters = sqs.Queue(
            self,
            "DeadLetters",
            fifo=fifo or None,
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=DLQ_RETENTION,
            removal_policy=RemovalPolicy.DESTROY,
        )
        self.queue = sqs.Queue(
            self,
            "Queue",
            fifo=fifo or None,
            content_based_deduplication=True if fifo else None,
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=retention,
            visibility_timeout=visibility_timeout,
            dead_letter_queue=sqs.DeadLetterQueue(queue=self.dead_letters, max_receive_count=max_receive_count),
            removal_policy=RemovalPolicy.DESTROY,
        )
