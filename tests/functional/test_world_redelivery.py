"""The embedded world's event source mapping redelivers as SQS does in an account: what a delivery leaves
unacknowledged comes back after the queue's visibility timeout in virtual time (not at once), a message moves to
the dead-letter queue on the receive after ``maxReceiveCount``, and one the handler releases itself comes back at
once. Against moto over HTTP, with the stack's own interruption queue."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from autoscaler import routing
from autoscaler_dev.world.aws_world import AWSWorld
from autoscaler_dev.world.faults import FaultRates, Faults
from autoscaler_dev.world.functions import Functions
from autoscaler_dev.world.stack import Queue, StackResources

VISIBILITY = routing.INTERRUPTION_REDELIVERY.visibility_seconds
RECEIVES = routing.INTERRUPTION_REDELIVERY.max_receives


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Delivery:
    """The interruption queue delivered to a handler that answers with ``answer``; what it was handed."""

    def __init__(self, aws: AWSWorld, faults: Faults | None = None) -> None:
        self.sqs = aws.client("sqs")
        self.queue: Queue = StackResources.create(aws, cluster=f"redeliver-{uuid.uuid4().hex[:8]}").interruption
        self.clock = Clock()
        self.functions = Functions(clock=self.clock, faults=faults)
        self.received: list[tuple[float, str]] = []  # (virtual second, receive count) of each record handed over
        self.answer: Callable[[dict[str, Any]], Any] = lambda event: {"batchItemFailures": []}

        def handler(event: dict[str, Any], context: Any) -> Any:
            for record in event["Records"]:
                self.received.append((self.clock.now, record["attributes"]["ApproximateReceiveCount"]))
            return self.answer(event)

        self.functions.modules["interruption"] = SimpleNamespace(handler=handler)

    def drain_at(self, second: float) -> int:
        self.clock.now = second
        return len(self.functions.drain("interruption", self.queue, self.sqs))

    def dead_letters(self) -> int:
        answer = self.sqs.get_queue_attributes(
            QueueUrl=self.queue.dead_letters_url, AttributeNames=["ApproximateNumberOfMessages"]
        )
        return int(answer["Attributes"]["ApproximateNumberOfMessages"])


@pytest.fixture
def delivery(aws_world: AWSWorld) -> Iterator[Delivery]:
    yield Delivery(aws_world)


def failing_every_record(event: dict[str, Any]) -> dict[str, Any]:
    return {"batchItemFailures": [{"itemIdentifier": r["messageId"]} for r in event["Records"]]}


def test_a_failed_record_comes_back_after_the_visibility_timeout_not_before(delivery: Delivery) -> None:
    delivery.sqs.send_message(QueueUrl=delivery.queue.url, MessageBody="{}")
    delivery.answer = failing_every_record
    assert delivery.drain_at(0) == 1
    assert delivery.drain_at(VISIBILITY - 1) == 0  # still hidden
    delivery.answer = lambda event: {"batchItemFailures": []}
    assert delivery.drain_at(VISIBILITY) == 1
    assert delivery.received == [(0, "1"), (VISIBILITY, "2")]
    assert delivery.drain_at(10 * VISIBILITY) == 0  # acknowledged: gone


def test_a_batch_whose_invocation_failed_is_held_whole(delivery: Delivery) -> None:
    for body in ("{}", "[]"):
        delivery.sqs.send_message(QueueUrl=delivery.queue.url, MessageBody=body)

    def crash(event: dict[str, Any]) -> Any:
        raise RuntimeError("the function crashed")

    delivery.answer = crash
    assert delivery.drain_at(0) == 1
    assert delivery.drain_at(VISIBILITY / 2) == 0
    assert delivery.drain_at(VISIBILITY) == 1 and len(delivery.received) == 4


def test_a_message_failing_every_receive_reaches_the_dead_letter_queue(delivery: Delivery) -> None:
    delivery.sqs.send_message(QueueUrl=delivery.queue.url, MessageBody="{}")
    delivery.answer = failing_every_record
    for receive in range(RECEIVES + 1):
        delivery.drain_at(receive * VISIBILITY)
    assert [count for _, count in delivery.received] == [str(n) for n in range(1, RECEIVES + 1)]
    assert delivery.dead_letters() == 1  # moved on the receive after maxReceiveCount, as SQS does


def test_a_record_the_handler_releases_comes_back_at_once(delivery: Delivery) -> None:
    delivery.sqs.send_message(QueueUrl=delivery.queue.url, MessageBody="{}")

    def release(event: dict[str, Any]) -> dict[str, Any]:
        for record in event["Records"]:
            delivery.sqs.change_message_visibility(
                QueueUrl=delivery.queue.url, ReceiptHandle=record["receiptHandle"], VisibilityTimeout=0
            )
        return failing_every_record(event)

    delivery.answer = release
    assert delivery.drain_at(0) == 1
    assert delivery.drain_at(1) == 1  # not held for the visibility timeout
    assert [count for _, count in delivery.received] == ["1", "2"]


def test_a_handled_message_duplicated_on_every_receive_never_reaches_the_dead_letter_queue(aws_world: AWSWorld) -> None:
    """At least once: every acknowledged delivery comes again (duplicates 100%). A duplicate is a stale copy, not a
    receive more, so a message the handler took every time is never moved to the dead-letter queue by the redrive
    (which would put it there without the reason the function gives what it dead-letters itself)."""
    delivery = Delivery(aws_world, Faults(FaultRates(seed=1, duplicates=1.0)))
    delivery.sqs.send_message(QueueUrl=delivery.queue.url, MessageBody="{}")
    for receive in range(RECEIVES + 2):
        delivery.drain_at(receive * VISIBILITY)
    assert [count for _, count in delivery.received] == [str(n) for n in range(1, RECEIVES + 1)]
    assert delivery.dead_letters() == 0 and delivery.drain_at((RECEIVES + 2) * VISIBILITY) == 0
