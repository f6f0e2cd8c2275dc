"""The interruption function end to end: SQS (moto, HTTP) -> the real handler -> Kubernetes (the emulator, HTTP)
and the state table (moto DynamoDB)."""

from __future__ import annotations

import json

import pytest

from autoscaler import runtime
from autoscaler.apis.v1 import labels as wk
from autoscaler.cloudprovider.errors import OfferingKey, TransientCloudError
from autoscaler.controllers.rebalance.recommendation import (
    ANNOTATION_REBALANCE_POLICY,
    ANNOTATION_REBALANCE_RECOMMENDED_AT,
)
from autoscaler.providers.aws.deadletters import SqsDeadLetters
from autoscaler_dev.kube_emulator.server import Fault
from autoscaler_dev.world import interruptions as sample
from tests.functional.interruption.conftest import MAX_RECEIVE_COUNT, NODEPOOL, InterruptionWorld

A, B, C = "i-0a1b2c3d4e5f60001", "i-0a1b2c3d4e5f60002", "i-0a1b2c3d4e5f60003"
DISRUPTED = {"key": wk.TAINT_DISRUPTED, "effect": "NoSchedule"}
NODECLAIM_DELETES = "DELETE nodeclaims.karpenter.sh"


def assert_cordoned_and_draining(world: InterruptionWorld, name: str) -> None:
    spec = world.node(f"node-{name}")["spec"]
    assert spec["unschedulable"] is True
    assert DISRUPTED in spec["taints"] and {"key": "team", "effect": "NoSchedule"} in spec["taints"]
    assert world.nodeclaim(name)["metadata"].get("deletionTimestamp")  # held by its finalizer: termination's turn


@pytest.mark.parametrize(
    ("event", "reason"),
    [
        (sample.spot_interruption_warning(A), "SpotInterrupted"),
        (sample.capacity_reservation_interruption_warning(A), "CapacityReservationInstanceInterrupted"),
        (sample.scheduled_change([A]), "ScheduledChange"),
        (sample.state_change(A, "stopping"), "InstanceStopping"),
        (sample.state_change(A, "terminated"), "InstanceTerminating"),
    ],
)
def test_each_draining_kind_through_the_real_handler(
    world: InterruptionWorld, event: dict[str, object], reason: str
) -> None:
    world.add_instance("a", A)
    world.add_instance("b", B, zone="us-west-2b")
    world.send(event)
    runtime.install(None)  # the runtime the function builds from its environment
    assert world.mapping.drain() == 1 and world.mapping.invocations == [{"batchItemFailures": []}]
    assert_cordoned_and_draining(world, "a")
    assert world.events("NodeClaim", "a") == [reason] and world.events("Node", "node-a") == [reason]
    assert world.node("node-b")["spec"].get("unschedulable") is None
    assert not world.nodeclaim("b")["metadata"].get("deletionTimestamp")
    spot = OfferingKey("m5.large", "us-west-2a", "spot")
    assert (spot in world.offerings.unavailable()) is (reason == "SpotInterrupted")
    # one read of each list, then the action: cordon, delete and the two events
    assert world.kube.requests["GET nodeclaims.karpenter.sh"] == world.kube.requests["GET nodes"] == 1
    assert world.writes() == {"PATCH nodes": 1, NODECLAIM_DELETES: 1, "POST events.events.k8s.io": 2}
    assert world.queue_depth(world.queue_url) == world.queue_depth(world.dlq_url) == 0


def test_rebalance_recommendation_is_an_event_unless_the_nodepool_opted_in(world: InterruptionWorld) -> None:
    world.kube.create(
        {**NODEPOOL, "metadata": {"name": "eager", "annotations": {ANNOTATION_REBALANCE_POLICY: "Replace"}}}
    )
    world.add_instance("a", A)
    world.add_instance("c", C, nodepool="eager")
    world.new_container()
    world.send(sample.rebalance_recommendation(A), sample.rebalance_recommendation(C))
    world.mapping.drain()
    assert world.events("Node", "node-a") == ["RebalanceRecommendation"]
    assert world.events("NodeClaim", "c") == ["RebalanceRecommendation"]
    assert ANNOTATION_REBALANCE_RECOMMENDED_AT not in (world.nodeclaim("a")["metadata"].get("annotations") or {})
    assert ANNOTATION_REBALANCE_RECOMMENDED_AT in world.nodeclaim("c")["metadata"]["annotations"]
    assert NODECLAIM_DELETES not in world.writes() and "PATCH nodes" not in world.writes()


def test_duplicates_lead_to_one_action(world: InterruptionWorld) -> None:
    world.add_instance("a", A)
    world.new_container()
    warning = sample.spot_interruption_warning(A)
    world.send(warning, warning, json.dumps(warning), sample.state_change(A, "shutting-down"))
    world.mapping.drain()
    world.send(warning)  # redelivered later, to the same warm container
    world.mapping.drain()
    world.new_container()  # and once more, to a cold one
    world.send(sample.state_change(A, "terminated"))
    world.mapping.drain()
    assert world.writes()["PATCH nodes"] == 1 and world.writes()[NODECLAIM_DELETES] == 1
    assert world.events("Node", "node-a") == ["InstanceTerminating", "SpotInterrupted"]
    assert world.queue_depth(world.queue_url) == world.queue_depth(world.dlq_url) == 0


def test_terminated_before_the_warning(world: InterruptionWorld) -> None:
    world.add_instance("a", A)
    world.new_container()
    world.send(sample.state_change(A, "terminated"))
    world.mapping.drain()
    assert_cordoned_and_draining(world, "a")
    world.send(sample.spot_interruption_warning(A))
    world.mapping.drain()
    assert world.writes()["PATCH nodes"] == 1 and world.writes()[NODECLAIM_DELETES] == 1
    assert OfferingKey("m5.large", "us-west-2a", "spot") in world.offerings.unavailable()
    assert world.events("NodeClaim", "a") == ["InstanceTerminating"]


def test_other_clusters_instances_are_left_alone(world: InterruptionWorld) -> None:
    world.add_instance("a", A)
    world.new_container()
    others = ["i-0ffffffffffffff01", "i-0ffffffffffffff02"]
    world.send(
        sample.spot_interruption_warning(others[0]),
        sample.state_change(others[1], "terminated"),
        sample.scheduled_change(others),
    )
    world.mapping.drain()
    assert world.writes() == {} and world.offerings.unavailable() == frozenset()
    assert world.mapping.invocations == [{"batchItemFailures": []}]
    assert world.queue_depth(world.queue_url) == world.queue_depth(world.dlq_url) == 0


def test_malformed_messages_end_in_the_dead_letter_queue_with_their_reason(world: InterruptionWorld) -> None:
    world.add_instance("a", A)
    world.new_container()
    missing_id = sample.spot_interruption_warning(A)
    del missing_id["detail"]["instance-id"]
    world.send("not json at all", {"hello": "world"}, missing_id, sample.state_change(A, "stopping"))
    assert world.mapping.drain() == 1  # nothing was retried
    assert_cordoned_and_draining(world, "a")  # the good message in the same batch was acted on
    dead = {m["Body"]: m["MessageAttributes"] for m in world.dead_letters()}
    assert {body: attributes["reason"]["StringValue"].split(":")[0] for body, attributes in dead.items()} == {
        "not json at all": "NotJson",
        json.dumps({"hello": "world"}): "NotAnEventBridgeEvent",
        json.dumps(missing_id): "InvalidDetail",
    }
    reason = dead[json.dumps(missing_id)]["reason"]["StringValue"]
    assert reason == "InvalidDetail: EC2 Spot Instance Interruption Warning: instance-id: Field required"
    queue_arn = world.mapping.queue_arn
    assert all(a["sourceQueueArn"]["StringValue"] == queue_arn and a["sourceMessageId"] for a in dead.values())
    assert world.queue_depth(world.queue_url) == 0


def test_without_a_dead_letter_url_the_redrive_policy_moves_malformed_messages(world: InterruptionWorld) -> None:
    world.new_container(dead_letters=False)
    world.send("{")
    invocations = world.mapping.drain()
    assert invocations == MAX_RECEIVE_COUNT  # failed each time, then SQS moved it
    assert [m["Body"] for m in world.dead_letters()] == ["{"]


def test_a_transient_api_failure_is_retried(world: InterruptionWorld) -> None:
    world.add_instance("a", A)
    world.add_instance("b", B)
    world.new_container(attempts=2)
    # the API server fails A's delete through both of the adapter's attempts, then recovers
    world.kube.inject(Fault(503, "DELETE", "/nodeclaims/a", times=2))
    sent = world.send(sample.spot_interruption_warning(A), sample.spot_interruption_warning(B))
    assert world.mapping.poll_once() == {"batchItemFailures": [{"itemIdentifier": sent[0]}]}
    assert_cordoned_and_draining(world, "b")
    assert not world.nodeclaim("a")["metadata"].get("deletionTimestamp")
    assert world.mapping.drain() == 1  # SQS redelivered only A's message, and it succeeded
    assert_cordoned_and_draining(world, "a")
    assert world.writes()["PATCH nodes"] == 2  # A was not cordoned twice
    assert world.queue_depth(world.queue_url) == world.queue_depth(world.dlq_url) == 0


def test_a_dead_letter_queue_that_refuses_is_a_transient_error(world: InterruptionWorld) -> None:
    missing = world.dlq_url.rsplit("/", 1)[0] + "/no-such-queue"
    with pytest.raises(TransientCloudError, match="no-such-queue"):
        SqsDeadLetters(world.clients, missing).send("{", {"reason": "NotJson: ..."})
