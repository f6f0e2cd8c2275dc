"""The interruption controller's failures: what it retries, what it dead-letters and with which reason."""

from __future__ import annotations

import pytest

from autoscaler.cloudprovider.errors import TransientCloudError
from autoscaler.cloudprovider.unavailable import InMemoryUnavailableOfferings
from autoscaler.controllers.interruption import (
    InterruptionController,
    Status,
)
from autoscaler.kube.port import ConflictError, TransientClusterError
from autoscaler_dev.world import interruptions as sample
from tests.support.memory_cluster import MemoryCluster
from tests.unit.interruption.controller_support import (
    A,
    B,
    Clock,
    RecordingDeadLetters,
    assert_cordoned_and_deleting,
    make,
    queued,
)


def test_a_transient_failure_fails_only_the_messages_of_that_instance(
    cluster: MemoryCluster, offerings: InMemoryUnavailableOfferings, clock: Clock
) -> None:
    cluster.fail("delete", TransientClusterError("503 from the API server"))
    controller = make(cluster, offerings, clock, max_workers=1)  # in order: A's delete meets the failure
    batch = [
        queued(sample.spot_interruption_warning(A), "m1"),
        queued(sample.state_change(A, "terminated"), "m2"),
        queued(sample.spot_interruption_warning(B), "m3"),
    ]
    report = controller.handle(batch)
    assert [(o.status, o.retry) for o in report.outcomes] == [
        (Status.FAILED, True),
        (Status.FAILED, True),
        (Status.ACTED, False),
    ]
    assert "TransientClusterError: 503 from the API server" in report.outcomes[0].reason
    assert report.retry_ids == {"m1", "m2"}
    # SQS redelivers m1 and m2: the cordon is not repeated, the delete now succeeds
    again = controller.handle([batch[0], batch[1]])
    assert [o.status for o in again.outcomes] == [Status.ACTED, Status.ACTED]
    assert cluster.calls["cordon"] == 2 and cluster.calls["delete"] == 3
    assert_cordoned_and_deleting(cluster, "a", "node-a")


@pytest.mark.parametrize(
    ("failing", "error"),
    [
        ("cordon", ConflictError("409 on every retry")),
        ("cordon", RuntimeError("a bug")),
        ("mark_unavailable", TransientCloudError("DynamoDB throttled")),
    ],
)
def test_any_failure_of_an_action_is_retried_not_raised(
    cluster: MemoryCluster,
    offerings: InMemoryUnavailableOfferings,
    clock: Clock,
    failing: str,
    error: Exception,
) -> None:
    if failing == "mark_unavailable":

        def broken(*_: object, **__: object) -> None:
            raise error

        offerings.mark_unavailable = broken  # type: ignore[method-assign]
    else:
        cluster.fail(failing, error)
    report = make(cluster, offerings, clock).handle([queued(sample.spot_interruption_warning(A), "m1")])
    assert report.outcomes[0].status is Status.FAILED and report.outcomes[0].retry
    assert f"{type(error).__name__}: {error}" in report.outcomes[0].reason


def test_a_failed_cluster_read_retries_the_batch_but_still_dead_letters(
    cluster: MemoryCluster, offerings: InMemoryUnavailableOfferings, clock: Clock
) -> None:
    cluster.fail("nodes", TransientClusterError("429"))
    dead_letters = RecordingDeadLetters()
    report = make(cluster, offerings, clock, dead_letters=dead_letters).handle(
        [queued(sample.spot_interruption_warning(A), "m1"), queued("not json", "m2")]
    )
    assert [(o.status, o.retry) for o in report.outcomes] == [(Status.FAILED, True), (Status.MALFORMED, False)]
    assert dead_letters.sent == [("m2", report.outcomes[1].reason)] and not cluster.writes and not cluster.events


def test_a_message_failing_on_its_last_receive_is_dead_lettered_with_its_failure(
    cluster: MemoryCluster, offerings: InMemoryUnavailableOfferings, clock: Clock
) -> None:
    # The API server down for longer than the queue's retries: SQS's redrive would move it with no reason.
    cluster.fail("list_raw", TransientClusterError("503"), TransientClusterError("503"))
    dead_letters = RecordingDeadLetters()
    controller = make(cluster, offerings, clock, dead_letters=dead_letters, max_receives=3)
    early, last = (controller.handle([queued(sample.spot_interruption_warning(A), "m1", n)]) for n in (2, 3))
    assert [(o.status, o.retry) for o in early.outcomes] == [(Status.FAILED, True)] and len(dead_letters.sent) == 1
    assert [(o.status, o.retry) for o in last.outcomes] == [(Status.FAILED, False)]
    assert dead_letters.sent[0][0] == "m1" and dead_letters.sent[0][1].startswith("retries exhausted: listing")
    assert dead_letters.attributes[0]["receiveCount"] == "3" and not cluster.writes


def test_malformed_messages_go_to_the_dead_letter_queue_once(
    cluster: MemoryCluster, offerings: InMemoryUnavailableOfferings, clock: Clock
) -> None:
    dead_letters = RecordingDeadLetters(TransientCloudError("SQS unavailable"))
    controller = make(cluster, offerings, clock, dead_letters=dead_letters)
    bad = sample.spot_interruption_warning(A)
    del bad["detail"]["instance-id"]
    first = controller.handle([queued(bad, "m1")])
    assert [(o.status, o.retry, o.counted) for o in first.outcomes] == [(Status.MALFORMED, True, False)]
    second = controller.handle([queued(bad, "m1", receive_count=2)])
    assert [(o.status, o.retry, o.counted) for o in second.outcomes] == [(Status.MALFORMED, False, True)]
    assert dead_letters.sent == [
        ("m1", "InvalidDetail: EC2 Spot Instance Interruption Warning: instance-id: Field required")
    ]
    assert first.malformed_count() + second.malformed_count() == 1
    assert dead_letters.attributes[0]["receiveCount"] == "2" and "sourceQueueArn" not in dead_letters.attributes[0]
    assert cluster.calls["list_raw"] == 0  # a batch of malformed messages never reads the cluster


def test_without_a_dead_letter_queue_malformed_messages_are_failed_and_counted_once(
    cluster: MemoryCluster, offerings: InMemoryUnavailableOfferings, clock: Clock
) -> None:
    controller = InterruptionController(cluster, offerings, None, clock=clock)
    counted = [controller.handle([queued("{", "m1", receive_count=n)]).malformed_count() for n in (1, 2, 3)]
    assert counted == [1, 0, 0]
    assert controller.handle([queued("{", "m1")]).retry_ids == {"m1"}  # SQS's redrive policy moves it
