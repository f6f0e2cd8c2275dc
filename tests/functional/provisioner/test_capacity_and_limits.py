"""What the provisioner does when EC2 has no capacity for its first choice, when a NodePool's limits are
reached, and when the queue carries something that is not an event."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from autoscaler import metrics
from autoscaler.apis.v1 import labels as wk
from autoscaler.cloudprovider.errors import OfferingKey
from autoscaler_dev.world.aws_world import AWSWorld
from tests.functional.provisioner.world import ProvisionerWorld


@pytest.fixture
def world(aws_world: AWSWorld, monkeypatch: pytest.MonkeyPatch) -> Iterator[ProvisionerWorld]:
    with ProvisionerWorld.start(aws_world, monkeypatch) as world:
        yield world


def lifecycle(instance: dict[str, object]) -> str:
    return "spot" if instance.get("InstanceLifecycle") == "spot" else "on-demand"


def test_no_capacity_for_the_first_choice_launches_another_offering_next_pass(world: ProvisionerWorld) -> None:
    world.setup(capacity_types=("spot", "on-demand"))
    for i in range(2):
        world.pending_pod(f"web-{i}", "1", "2Gi")
    world.publish("Pod Unschedulable", "web")
    with world.aws.fleet_capacity(world.clients, lambda override: True):  # spot is exhausted everywhere
        first = world.drain()[0]["pass"]
    assert first["nodeclaims_created"] >= 1 and first["launched"] == 0
    assert first["deleted"] == {"insufficient_capacity": first["nodeclaims_created"]}
    assert world.nodeclaims() == [] or all(c.metadata.deletion_timestamp for c in world.nodeclaims())
    (event, *_) = world.events("InsufficientCapacityError")
    assert event["type"] == "Warning" and "InsufficientInstanceCapacity" in event["note"]

    for claim in world.nodeclaims():  # the termination function removes the finalizers of instance-less claims
        body = world.kube.get(wk.API_VERSION, "NodeClaim", claim.name)
        world.kube.apply({**body, "metadata": {**body["metadata"], "finalizers": []}})

    world.publish("NodeClaim Deleted", "claim", kind="NodeClaim")
    second = world.drain()[0]["pass"]
    assert second["launched"] == second["nodeclaims_created"] >= 1
    exhausted = world.runtime.unavailable.unavailable()  # what the failed launch marked, shared in DynamoDB
    assert exhausted and {key.capacity_type for key in exhausted} == {"spot"}
    claims = [c for c in world.nodeclaims() if not c.metadata.deletion_timestamp]  # one or more: repacking decides
    chosen = []
    for claim in claims:
        labels = claim.metadata.labels
        chosen.append(
            OfferingKey(labels[wk.LABEL_INSTANCE_TYPE], labels[wk.LABEL_ZONE], labels[wk.LABEL_CAPACITY_TYPE])
        )
    assert claims and not set(chosen) & exhausted  # other offerings than the exhausted first choice
    launched = sorted((i["InstanceType"], lifecycle(i)) for i in world.instances())
    assert launched == sorted((key.instance_type, key.capacity_type) for key in chosen)


def test_pods_beyond_the_nodepool_limits_stay_pending_with_the_reason(world: ProvisionerWorld) -> None:
    world.setup(limits={"cpu": "4"})
    for i in range(3):
        world.pending_pod(f"batch-{i}", "3", "4Gi")
    world.publish("Pod Unschedulable", "batch")
    first = world.drain()[0]["pass"]
    assert first["nodeclaims_created"] == 1 and first["unschedulable"] == 2
    failures = world.events("FailedScheduling")
    assert len(failures) == 2
    for event in failures:
        assert event["type"] == "Warning" and event["regarding"]["kind"] == "Pod"
        assert "limits reached" in event["note"] and world.pool in event["note"]
        pod = world.kube.get("v1", "Pod", event["regarding"]["name"])
        assert pod["status"]["phase"] == "Pending" and not pod["spec"].get("nodeName")

    world.sweep()  # a minute later: the in-flight NodeClaim still counts against the limit
    second = world.drain()[0]["pass"]
    assert second["nodeclaims_created"] == 0 and second["unschedulable"] == 2
    assert len(world.nodeclaims()) == 1 and len(world.instances()) == 1
    status = world.kube.get(wk.API_VERSION, "NodePool", world.pool)["status"]
    assert status["resources"]["nodes"] == "1" and status["resources"]["cpu"] == "4"


def test_an_unreadable_message_fails_alone_and_returns_to_the_queue_at_once(world: ProvisionerWorld) -> None:
    world.setup()
    world.pending_pod("web-0", "500m", "1Gi")
    sqs = world.aws.client("sqs")
    sqs.send_message(QueueUrl=world.queue_url, MessageBody="not an event", MessageGroupId="provisioning")
    world.sweep()
    records = world.receive()
    assert len(records) == 2
    result = world.invoke(records)
    (failure,) = result["batchItemFailures"]
    assert failure["itemIdentifier"] == records[0]["messageId"]
    assert result["pass"]["nodeclaims_created"] == 1  # the sweep in the same batch still passed
    again = world.receive()  # visible again at once, not after the 12-minute visibility timeout
    assert [r["body"] for r in again] == ["not an event"]
    assert world.metric(metrics.PROVISIONER_UNREADABLE_MESSAGES) == 1


def test_a_pass_that_cannot_read_the_cluster_acknowledges_its_batch(world: ProvisionerWorld) -> None:
    world.setup()
    world.sweep()
    world.kube.stop()  # the API server is unreachable
    result = world.invoke()
    assert result == {"batchItemFailures": [], "pass": {"failed": True}}
    assert world.metric(metrics.PROVISIONER_FAILED_PASSES) == 1
