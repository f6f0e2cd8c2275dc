"""EC2 and AWS Health events -> the interruption queue -> the interruption function.

Karpenter's interruption handling: five rules on the account's default bus feed one SQS queue. Messages are
kept 300 s (an interruption notice older than that is moot). Redelivery (``routing.INTERRUPTION_REDELIVERY``,
which the embedded world's queue uses too): a visibility timeout just over the function's timeout, so that a
failed batch is retried within seconds, and a redrive count chosen so a failing message is retried and then
reaches the dead-letter queue before its retention ends: receives happen at about 0, V, 2V, ... and the message
moves to the DLQ on receive number max_receives + 1, which must come before 300 s.
"""

from __future__ import annotations

from aws_cdk import Aws, Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda_event_sources as sources
from constructs import Construct

from autoscaler.routing import INTERRUPTION_REDELIVERY, INTERRUPTION_RULES
from infra.constructs.autoscaler_function import AutoscalerFunction
from infra.constructs.queues import QueueWithDeadLetters

RETENTION_SECONDS = 300
MAX_RECEIVE_COUNT = INTERRUPTION_REDELIVERY.max_receives
BATCH_SIZE = 10
BATCHING_WINDOW_SECONDS = 1
MAX_CONCURRENCY = 5


class Interruption(Construct):
    def __init__(
        self, scope: Construct, construct_id: str, *, consumer: AutoscalerFunction, enabled: bool = True
    ) -> None:
        super().__init__(scope, construct_id)
        visibility = INTERRUPTION_REDELIVERY.visibility_seconds
        if visibility < consumer.spec.timeout_seconds:  # Lambda refuses it
            raise ValueError(f"the interruption queue's visibility ({visibility} s) is under the function's timeout")
        if MAX_RECEIVE_COUNT * visibility >= RETENTION_SECONDS:
            raise ValueError(
                f"interruption messages would expire before reaching the DLQ: {MAX_RECEIVE_COUNT} receives "
                f"{visibility} s apart exceed the {RETENTION_SECONDS} s retention; shorten the function timeout"
            )
        queues = QueueWithDeadLetters(
            self,
            "Queues",
            retention=Duration.seconds(RETENTION_SECONDS),
            visibility_timeout=Duration.seconds(visibility),
            max_receive_count=MAX_RECEIVE_COUNT,
        )
        self.queue = queues.queue
        self.dead_letters = queues.dead_letters
        # The function sends malformed messages to the dead-letter queue itself, with their reason as message
        # attributes, instead of letting them be retried until maxReceiveCount (docs/interruption.md).
        consumer.function.add_environment("INTERRUPTION_DLQ_URL", self.dead_letters.queue_url)
        # A message still failing on its last receive goes there too, with its failure as reason (not silently).
        consumer.function.add_environment("INTERRUPTION_MAX_RECEIVES", str(MAX_RECEIVE_COUNT))
        consumer.function.add_to_role_policy(
            iam.PolicyStatement(
                sid="DeadLetterMalformedMessages", actions=["sqs:SendMessage"], resources=[self.dead_letters.queue_arn]
            )
        )
        self.queue.add_to_resource_policy(
            iam.PolicyStatement(
                sid="EventsAndSqsMaySend",
                principals=[iam.ServicePrincipal("events.amazonaws.com"), iam.ServicePrincipal("sqs.amazonaws.com")],
                actions=["sqs:SendMessage"],
                resources=[self.queue.queue_arn],
                # Only this account's rules: a bare service principal would let any account's rule send here.
                conditions={"StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID}},
            )
        )
        self.rules = [
            events.Rule(
                self,
                construct_id,
                description=f"{detail_type} -> interruption queue",
                event_pattern=events.EventPattern(source=[source], detail_type=[detail_type]),
                targets=[targets.SqsQueue(self.queue)],
                enabled=enabled,
            )
            for construct_id, (source, detail_type) in INTERRUPTION_RULES.items()
        ]
        consumer.alias.add_event_source(
            sources.SqsEventSource(
                self.queue,
                batch_size=BATCH_SIZE,
                max_batching_window=Duration.seconds(BATCHING_WINDOW_SECONDS),
                report_batch_item_failures=True,
                max_concurrency=MAX_CONCURRENCY,
                enabled=enabled,
            )
        )
