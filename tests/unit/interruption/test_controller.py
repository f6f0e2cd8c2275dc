"""The interruption controller over an in-memory Kubernetes: what each batch writes, and what it retries."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from autoscaler import metrics as m
from autoscaler.cloudprovider.errors import OfferingKey
from autoscaler.cloudprovider.unavailable import InMemoryUnavailableOfferings
from autoscaler.controllers.interruption import (
    FRESH_PER_BATCH,
    Status,
    metric_points,
)
from autoscaler.controllers.rebalance.recommendation import (
    ANNOTATION_REBALANCE_RECOMMENDED_AT,
)
from autoscaler.kube.port import TransientClusterError
from autoscaler_dev.world import interruptions as sample
from tests.support.memory_cluster import MemoryCluster
from tests.support.metrics import total
from tests.unit.interruption.builders import make_node, make_nodeclaim
from tests.unit.interruption.controller_support import (
    FOREIGN,
    T0,
    A,
    B,
    C,
    Clock,
    assert_cordoned_and_deleting,
    make,
    queued,
)


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (sample.spot_interruption_warning(A), "SpotInterrupted"),
        (sample.scheduled_change([A]), "ScheduledChange"),
        (sample.state_change(A, "stopped"), "InstanceStopping"),
        (sample.state_change(A, "shutting-down"), "InstanceTerminating"),
    ],
)
def test_each_draining_kind_cordons_deletes_and_records_events(
    cluster: MemoryCluster, offerings: InMemoryUnavailableOfferings, clock: Clock, body: dict[str, Any], reason: str
) -> None:
    report = make(cluster, offerings, clock).handle([queued(body, "m1")])
    assert [(o.status, o.retry) for o in report.outcomes] == [(Status.ACTED, False)]
    assert_cordoned_and_deleting(cluster, "a", "node-a")
    assert cluster.events_for("NodeClaim", "a") == [reason] and cluster.events_for("Node", "node-a") == [reason]
    assert "deletionTimestamp" not in cluster.stored("NodeClaim", "b")["metadata"]  # type: ignore[index]
    # the two reads of the batch, then one cordon, one delete and two events
    assert (cluster.calls["list_raw"], cluster.calls["nodes"]) == (1, 1)
    assert cluster.writes == ["cordon Node/node-a", "delete NodeClaim/a"] and len(cluster.events) == 2
    spot = OfferingKey("m5.large", "us-west-2a", "spot")
    assert (spot in offerings.unavailable()) is (reason == "SpotInterrupted")


def test_a_spot_offering_is_unavailable_for_three_minutes(
    cluster: MemoryCluster, offerings: InMemoryUnavailableOfferings, clock: Clock
) -> None:
    make(cluster, offerings, clock).handle([queued(sample.spot_interruption_warning(B), "m1")])
    assert offerings.unavailable() == {OfferingKey("m5.large", "us-west-2b", "spot")}
    clock.now += timedelta(minutes=3)
    assert offerings.unavailable() == frozenset()


def test_duplicates_in_a_batch_lead_to_one_action(
    cluster: MemoryCluster, offerings: InMemoryUnavailableOfferings, clock: Clock
) -> None:
    warning = sample.spot_interruption_warning(A)
    batch = [
        queued(warning, "m1"),
        queued(warning, "m2"),  # an EventBridge duplicate: same event, another SQS message
        queued(sample.state_change(A, "shutting-down"), "m3"),
        queued(sample.scheduled_change([A, B]), "m4"),
    ]
    report = make(cluster, offerings, clock).handle(batch)
    assert [o.status for o in report.outcomes] == [Status.ACTED] * 4
    assert cluster.calls["cordon"] == 2 and cluster.calls["delete"] == 2  # A and B, once each
    assert cluster.events_for("Node", "node-a") == ["SpotInterrupted", "InstanceTerminating", "ScheduledChange"]
    assert report.actions() == {
        ("CordonAndDrain", "spot_interrupted"): 1,
        ("CordonAndDrain", "scheduled_change"): 1,
        ("MarkUnavailable", "spot_interrupted"): 1,
    }


def test_every_node_of_a_batch_is_cordoned_before_any_nodeclaim_is_deleted(
    cluster: MemoryCluster, offerings: InMemoryUnavailableOfferings, clock: Clock
) -> None:
    batch = [queued(sample.state_change(i, "stopping"), f"m{n}") for n, i in enumerate((A, B, C))]
    make(cluster, offerings, clock, max_workers=1).handle(batch)
    assert cluster.writes == [
        "cordon Node/node-a",
        "cordon Node/node-b",
        "cordon Node/node-c",
        "delete NodeClaim/a",
        "delete NodeClaim/b",
        "delete NodeClaim/c",
    ]


def test_redelivered_messages_find_the_work_done(
    cluster: MemoryCluster, offerings: InMemoryUnavailableOfferings, clock: Clock
) -> None:
    controller = make(cluster, offerings, clock)
    controller.handle([queued(sample.state_change(A, "stopping"), "m1")])
    writes = (len(cluster.writes), len(cluster.events))
    report = controller.handle([queued(sample.state_change(A, "stopping"), "m1", receive_count=2)])
    assert [(o.status, o.reason) for o in report.outcomes] == [(Status.NO_OP, "already cordoned and being deleted")]
    assert (len(cluster.writes), len(cluster.events)) == writes
    # a fresh container (cold start) reads the cluster again and still writes nothing
    cold = make(cluster, offerings, clock)
    assert [o.status for o in cold.handle([queued(sample.state_change(A, "stopped"), "m2")]).outcomes] == [Status.NO_OP]
    assert (len(cluster.writes), len(cluster.events)) == writes


def test_terminated_before_the_warning(
    cluster: MemoryCluster, offerings: InMemoryUnavailableOfferings, clock: Clock
) -> None:
    controller = make(cluster, offerings, clock)
    first = controller.handle([queued(sample.state_change(A, "terminated"), "m1")])
    assert first.outcomes[0].status is Status.ACTED
    late = controller.handle([queued(sample.spot_interruption_warning(A), "m2")])
    assert late.outcomes[0].status is Status.NO_OP and late.outcomes[0].retry is False
    assert cluster.calls["cordon"] == 1 and cluster.calls["delete"] == 1
    # the late warning still tells the provisioner to avoid the reclaimed offering
    assert OfferingKey("m5.large", "us-west-2a", "spot") in offerings.unavailable()
    assert late.actions() == {("MarkUnavailable", "spot_interrupted"): 1}


def test_other_clusters_instances_and_ignored_events_are_no_ops(
    cluster: MemoryCluster, offerings: InMemoryUnavailableOfferings, clock: Clock
) -> None:
    report = make(cluster, offerings, clock).handle(
        [
            queued(sample.spot_interruption_warning(FOREIGN), "m1"),
            queued(sample.state_change(A, "running"), "m2"),
            queued(sample.eventbridge_event("aws.ec2", "EC2 Fleet Error", {}, [], time=T0, event_id="e"), "m3"),
        ]
    )
    assert [(o.status, o.kind) for o in report.outcomes] == [
        (Status.NO_OP, "spot_interrupted"),
        (Status.NO_OP, "no_op"),
        (Status.NO_OP, "no_op"),
    ]
    assert "not one of this cluster's NodeClaims" in report.outcomes[0].reason
    assert not cluster.writes and not cluster.events and offerings.unavailable() == frozenset()


def test_the_index_is_reused_across_batches_until_an_unknown_instance_or_its_age(
    cluster: MemoryCluster, offerings: InMemoryUnavailableOfferings, clock: Clock
) -> None:
    controller = make(cluster, offerings, clock)
    assert controller.handle([queued(sample.state_change(A, "stopping"), "m1")]).index_rebuilt
    assert not controller.handle([queued(sample.state_change(B, "stopping"), "m2")]).index_rebuilt
    clock.now += timedelta(seconds=5)
    assert controller.handle([queued(sample.state_change(FOREIGN, "stopping"), "m3")]).index_rebuilt
    assert not controller.handle([queued(sample.state_change(FOREIGN, "stopping"), "m4")]).index_rebuilt
    clock.now += timedelta(minutes=5)
    assert controller.handle([queued(sample.state_change(C, "stopping"), "m5")]).index_rebuilt
    assert cluster.calls["list_raw"] == cluster.calls["nodes"] == 3
    fresh = make(cluster, offerings, clock, index_policy=FRESH_PER_BATCH)
    for n in range(3):
        fresh.handle([queued(sample.state_change(A, "stopping"), f"f{n}")])
    assert cluster.calls["list_raw"] == 6


def test_a_nodeclaim_registered_after_the_index_was_built_is_found(
    cluster: MemoryCluster, offerings: InMemoryUnavailableOfferings, clock: Clock
) -> None:
    controller = make(cluster, offerings, clock)
    controller.handle([queued(sample.state_change(A, "stopping"), "m1")])
    late = "i-000000000000000d4"
    cluster.add(make_nodeclaim("d", late, node_name="node-d"), make_node("node-d", late))
    clock.now += timedelta(seconds=5)
    report = controller.handle([queued(sample.spot_interruption_warning(late), "m2")])
    assert report.index_rebuilt and report.outcomes[0].status is Status.ACTED
    assert_cordoned_and_deleting(cluster, "d", "node-d")


def test_rebalance_recommendations(
    cluster: MemoryCluster, offerings: InMemoryUnavailableOfferings, clock: Clock
) -> None:
    controller = make(cluster, offerings, clock)
    report = controller.handle(
        [
            queued(sample.rebalance_recommendation(A, time=T0), "m1"),
            queued(sample.rebalance_recommendation(C, time=T0), "m2"),
        ]
    )
    assert [o.status for o in report.outcomes] == [Status.ACTED, Status.ACTED]
    assert cluster.events_for("Node", "node-a") == ["RebalanceRecommendation"]
    assert ANNOTATION_REBALANCE_RECOMMENDED_AT not in (cluster.nodeclaim("a").metadata.annotations or {})  # type: ignore[union-attr]
    # NodePool "eager" opted in: the recommendation is recorded on the NodeClaim for the provisioner
    annotations = cluster.nodeclaim("c").metadata.annotations or {}  # type: ignore[union-attr]
    assert annotations[ANNOTATION_REBALANCE_RECOMMENDED_AT] == "2026-03-02T14:05:00Z"
    assert cluster.calls["cordon"] == cluster.calls["delete"] == 0
    assert report.actions() == {
        ("Notify", "rebalance_recommendation"): 1,
        ("RequestReplacement", "rebalance_recommendation"): 1,
    }
    # a repeated recommendation for C is recorded already: nothing more; NodePools were listed once
    again = controller.handle([queued(sample.rebalance_recommendation(C), "m3")])
    assert again.outcomes[0].status is Status.NO_OP and cluster.calls["nodepools"] == 1


def test_rebalance_messages_are_retried_when_nodepools_cannot_be_read(
    cluster: MemoryCluster, offerings: InMemoryUnavailableOfferings, clock: Clock
) -> None:
    cluster.fail("nodepools", TransientClusterError("503"))
    report = make(cluster, offerings, clock).handle(
        [queued(sample.rebalance_recommendation(C), "m1"), queued(sample.state_change(B, "stopping"), "m2")]
    )
    assert [(o.status, o.retry) for o in report.outcomes] == [(Status.FAILED, True), (Status.ACTED, False)]


def test_metrics_of_a_batch(cluster: MemoryCluster, offerings: InMemoryUnavailableOfferings, clock: Clock) -> None:
    report = make(cluster, offerings, clock).handle(
        [
            queued(sample.spot_interruption_warning(A), "m1"),
            queued(sample.state_change(B, "stopped"), "m2"),
            queued(sample.state_change(B, "running"), "m3"),
            queued("[]", "m4"),
        ]
    )
    points = metric_points(report)
    received = {
        dict(p.dimensions)["message_type"]: p.value for p in points if p.name == m.INTERRUPTION_RECEIVED_MESSAGES
    }
    assert received == {"spot_interrupted": 1, "instance_stopped": 1, "no_op": 1, "malformed": 1}
    assert total(points, m.INTERRUPTION_MALFORMED_MESSAGES) == 1 and total(points, m.INTERRUPTION_BATCH_SIZE) == 4
    latencies = [p for p in points if p.name == m.INTERRUPTION_MESSAGE_QUEUE_DURATION]
    assert len(latencies) == 2 and all(p.unit == "Seconds" and p.value > 0 for p in latencies)
    assert (
        total(points, m.INTERRUPTION_ACTIONS_PERFORMED, action="CordonAndDrain", message_type="spot_interrupted") == 1
    )
