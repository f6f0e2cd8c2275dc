"""Cluster events: the in-cluster forwarder -> a custom bus -> the provisioning queue and the functions.

Provisioning must run one pass at a time. Reserved concurrency 1 behind an SQS event source does not give
that safely: Lambda's pollers keep receiving, get throttled, and throttled receives count towards
maxReceiveCount, so healthy messages drift into the DLQ. Instead the provisioning queue is FIFO and every
message (cluster events and the one-minute sweep alike) carries the same message group: Lambda delivers a
FIFO message group in order, one batch at a time, so passes are serialized by the queue itself with no
throttling and no lease to expire. The price: FIFO sources take batches of at most 10 and no batching
window, so a burst of events becomes several short passes in a row; a pass reconciles from the cluster's
state, so later passes find little left to do.
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_lambda_event_sources as sources
from constructs import Construct

from autoscaler.events import FORWARDER_SOURCE
from autoscaler.routing import (
    NODECLASS_DETAIL_TYPES,
    PROVISIONING_DETAIL_TYPES,
    PROVISIONING_GROUP,
    PROVISIONING_REDELIVERY,
    TERMINATION_DETAIL_TYPES,
)
from infra.constructs.autoscaler_function import AutoscalerFunction
from infra.constructs.queues import QueueWithDeadLetters

PROVISIONING_RETENTION = Duration.hours(1)  # a trigger older than this is covered by the sweeps since
PROVISIONING_MAX_RECEIVE_COUNT = PROVISIONING_REDELIVERY.max_receives
PROVISIONING_BATCH_SIZE = 10  # the most an SQS FIFO event source takes
# Who gets which of the forwarder's detail-types: autoscaler.routing (the embedded world creates the same rules).


class ClusterEvents(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        bus_name: str,
        provisioner: AutoscalerFunction,
        termination: AutoscalerFunction,
        nodeclass: AutoscalerFunction,
        enabled: bool = True,
    ) -> None:
        super().__init__(scope, construct_id)
        self.enabled = enabled
        self.bus = events.EventBus(
            self, "Bus", event_bus_name=bus_name, description="Cluster events from the forwarder"
        )
        if PROVISIONING_REDELIVERY.visibility_seconds < provisioner.spec.timeout_seconds:  # Lambda refuses it
            raise ValueError("the provisioning queue's visibility is shorter than the provisioner's timeout")
        queues = QueueWithDeadLetters(
            self,
            "Provisioning",
            fifo=True,
            retention=PROVISIONING_RETENTION,
            visibility_timeout=Duration.seconds(PROVISIONING_REDELIVERY.visibility_seconds),
            max_receive_count=PROVISIONING_MAX_RECEIVE_COUNT,
        )
        self.provisioning_queue = queues.queue
        self.provisioning_dead_letters = queues.dead_letters
        self.provisioning_target = targets.SqsQueue(self.provisioning_queue, message_group_id=PROVISIONING_GROUP)

        self.rules = {
            "ToProvisioning": self._rule("ToProvisioning", PROVISIONING_DETAIL_TYPES, self.provisioning_target),
            "ToTermination": self._rule(
                "ToTermination", TERMINATION_DETAIL_TYPES, targets.LambdaFunction(termination.alias)
            ),
            "ToNodeClass": self._rule("ToNodeClass", NODECLASS_DETAIL_TYPES, targets.LambdaFunction(nodeclass.alias)),
        }
        provisioner.alias.add_event_source(
            sources.SqsEventSource(
                self.provisioning_queue,
                batch_size=PROVISIONING_BATCH_SIZE,
                report_batch_item_failures=True,
                enabled=enabled,
            )
        )

    def _rule(self, construct_id: str, detail_types: tuple[str, ...], target: events.IRuleTarget) -> events.Rule:
        return events.Rule(
            self,
            construct_id,
            event_bus=self.bus,
            description=f"cluster events -> {construct_id.removeprefix('To').lower()}",
            event_pattern=events.EventPattern(source=[FORWARDER_SOURCE], detail_type=list(detail_types)),
            targets=[target],
            enabled=self.enabled,
        )
