"""The garbage collection function's real handler over moto (EC2, IAM, DynamoDB) and the Kubernetes API emulator:
an instance terminated behind our back, a launch that crashed before its NodeClaim was recorded, a second cluster
in the same account, a stale launch template and an orphaned instance profile, the lease between passes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from autoscaler import runtime
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.conditions import timestamp
from autoscaler.metrics import SKIPPED_EVENTS
from autoscaler.providers.aws.instanceprofiles import instance_profile_name
from autoscaler.providers.aws.launchconfig import launch_tags
from autoscaler.settings import GARBAGE_COLLECTION_LEASE, LEASE_PREFIX, STATE_TABLE_KEY, STATE_TABLE_TTL
from autoscaler_dev.harness import Context, load_handler
from autoscaler_dev.kube_emulator.emulator import KubeEmulator
from autoscaler_dev.world.aws_world import REGION, AWSWorld
from tests.functional.aws.helpers import (
    existing_templates,
    instance_profile,
    launch_template,
    owned_tags,
    profile_names,
    profile_tags,
)
from tests.support.kube import nodeclaim, nodeclass
from tests.support.lambdas import LambdaEnvironment, lambda_environment, sample_event
from tests.support.metrics import emitted

__all__ = ["clock", "lambda_environment"]

HANDLER = load_handler("garbage_collection")


@dataclass
class Clock:
    """The functions' clock, moved forward by tests (EC2 and the emulator keep real time)."""

    offset: timedelta = timedelta(0)

    def __call__(self) -> datetime:
        return datetime.now(UTC) + self.offset


@pytest.fixture
def clock(lambda_environment: LambdaEnvironment) -> Iterator[Clock]:
    clock = Clock()
    runtime.install(runtime.Runtime.build(clock=clock))
    yield clock


def collect(event: dict[str, Any] | None = None) -> dict[str, Any]:
    answer: dict[str, Any] = HANDLER.handler(event or sample_event("scheduled-event.json"), Context("gc"))
    json.dumps(answer)  # what Lambda returns must serialize
    return answer


def launch(world: AWSWorld, cluster: str, *, nodeclass: str = "default", nodeclaim: str | None = None) -> str:
    """An instance tagged as our launcher tags it (and with ``karpenter.sh/nodeclaim`` right after CreateFleet)."""
    tags = launch_tags(cluster, "default", nodeclass, None)
    if nodeclaim:
        tags[wk.TAG_NODECLAIM] = nodeclaim
    answer = world.client("ec2").run_instances(
        ImageId=world.images["al2023/x86_64/standard"],
        InstanceType="m5.large",
        MinCount=1,
        MaxCount=1,
        SubnetId=world.subnets["us-west-2a"],
        TagSpecifications=[{"ResourceType": "instance", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}],
    )
    return str(answer["Instances"][0]["InstanceId"])


def provider_id(instance_id: str) -> str:
    return f"aws:///us-west-2a/{instance_id}"


def state(world: AWSWorld, instance_id: str) -> str:
    reservations = world.client("ec2").describe_instances(InstanceIds=[instance_id])["Reservations"]
    return str(reservations[0]["Instances"][0]["State"]["Name"])


def registered_nodeclaim(name: str, instance_id: str, node: str, *, nodeclass_name: str = "default") -> dict[str, Any]:
    """A NodeClaim as the lifecycle leaves it: launched and registered ten minutes ago, holding its finalizer."""
    body = nodeclaim(name)
    body["metadata"]["finalizers"] = [wk.FINALIZER_TERMINATION]
    body["spec"]["nodeClassRef"]["name"] = nodeclass_name
    since = timestamp(datetime.now(UTC) - timedelta(minutes=10))
    body["status"] = {
        "providerID": provider_id(instance_id),
        "nodeName": node,
        "conditions": [
            {"type": t, "status": "True", "reason": t, "message": "", "lastTransitionTime": since}
            for t in ("Launched", "Registered")
        ],
    }
    return body


def node(name: str, instance_id: str, *, ready: bool) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "spec": {"providerID": provider_id(instance_id)},
        "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def events(kube: KubeEmulator) -> dict[tuple[str, str], str]:
    """(reason, regarding name) -> note of every event recorded."""
    return {(e["reason"], e["regarding"]["name"]): e["note"] for e in kube.list("events.k8s.io/v1", "Event")}


def test_a_nodeclaim_whose_instance_was_terminated_behind_our_back_is_deleted(
    aws_world: AWSWorld, kube: KubeEmulator, clock: Clock, lambda_environment: LambdaEnvironment, capsys: Any
) -> None:
    cluster = lambda_environment.cluster_name
    gone, kubelet_alive = launch(aws_world, cluster), launch(aws_world, cluster)
    kube.create(registered_nodeclaim("gone", gone, "node-gone"))
    kube.create(node("node-gone", gone, ready=False))
    kube.create(registered_nodeclaim("kubelet-alive", kubelet_alive, "node-alive"))
    kube.create(node("node-alive", kubelet_alive, ready=True))
    aws_world.client("ec2").terminate_instances(InstanceIds=[gone, kubelet_alive])  # someone else did it
    capsys.readouterr()

    answer = collect()

    assert answer["collected"]["NodeClaim"] == ["gone"] and not answer["failures"]
    deleted = kube.get("karpenter.sh/v1", "NodeClaim", "gone")
    assert deleted is not None and deleted["metadata"]["deletionTimestamp"]  # termination removes its finalizer
    kept = kube.get("karpenter.sh/v1", "NodeClaim", "kubelet-alive")
    assert kept is not None and not kept["metadata"].get("deletionTimestamp")
    assert [k["name"] for k in answer["kept"]] == ["kubelet-alive"]  # its Node is Ready: the kubelet still runs
    assert events(kube)[("NodeClaimGarbageCollected", "gone")] == (
        f"its instance {provider_id(gone)} no longer exists: NodeClaim deleted"
    )
    metrics = emitted(capsys.readouterr().out)
    # Karpenter's metric; the NodeClaim has no capacity-type label, and CloudWatch refuses an empty dimension.
    assert metrics["karpenter_nodeclaims_disrupted_total[nodepool=default,reason=garbage_collected]"] == 1
    assert metrics["karpenter_garbage_collection_nodeclaims_deleted_total"] == 1
    assert metrics["karpenter_garbage_collection_leaked_instances_total"] == 0


def test_an_instance_whose_launch_crashed_before_its_nodeclaim_was_recorded_is_terminated_after_30_seconds(
    aws_world: AWSWorld, kube: KubeEmulator, clock: Clock, lambda_environment: LambdaEnvironment, capsys: Any
) -> None:
    cluster = lambda_environment.cluster_name
    crashed = launch(aws_world, cluster, nodeclaim="default-never-recorded")
    kube.create(node("node-crashed", crashed, ready=True))  # it even registered
    being_recorded = launch(aws_world, cluster, nodeclaim="default-recording")
    kube.create(nodeclaim("default-recording"))  # launched; its providerID not written yet

    assert collect()["collected"]["Instance"] == []  # younger than 30 s: its NodeClaim may be on its way
    assert state(aws_world, crashed) == "running"

    clock.offset = timedelta(seconds=31)
    capsys.readouterr()
    answer = collect()

    assert answer["collected"]["Instance"] == [provider_id(crashed)] and answer["collected"]["Node"] == ["node-crashed"]
    assert state(aws_world, crashed) in ("shutting-down", "terminated")
    assert kube.get("v1", "Node", "node-crashed") is None
    assert state(aws_world, being_recorded) == "running"  # the provisioner adopts it through its tag
    note = events(kube)[("InstanceGarbageCollected", "node-crashed")]
    assert note.startswith(f"instance {provider_id(crashed)} launched ") and note.endswith("terminated")
    assert emitted(capsys.readouterr().out)["karpenter_garbage_collection_leaked_instances_total"] == 1


def test_another_clusters_instances_templates_and_profiles_are_never_touched(
    aws_world: AWSWorld, kube: KubeEmulator, clock: Clock, lambda_environment: LambdaEnvironment
) -> None:
    ours, other = lambda_environment.cluster_name, f"{lambda_environment.cluster_name}-other"
    their_instance = launch(aws_world, other)
    their_template = launch_template(aws_world, owned_tags(other, "gone"))
    # Named exactly as our profile for that class would be, but tagged for the other cluster.
    lookalike = instance_profile(
        aws_world, instance_profile_name(ours, REGION, "gone"), profile_tags(other, "gone"), role=aws_world.role
    )
    clock.offset = timedelta(hours=1)

    answer = collect()

    assert all(not names for names in answer["collected"].values()) and not answer["failures"]
    assert state(aws_world, their_instance) == "running"
    assert existing_templates(aws_world, their_template) == {their_template}
    assert aws_world.client("iam").get_instance_profile(InstanceProfileName=lookalike)["InstanceProfile"]["Roles"]
    aws_world.client("ec2").terminate_instances(InstanceIds=[their_instance])


def test_a_stale_launch_template_and_an_orphaned_instance_profile_are_deleted(
    aws_world: AWSWorld, kube: KubeEmulator, clock: Clock, lambda_environment: LambdaEnvironment
) -> None:
    cluster = lambda_environment.cluster_name
    current_ami = aws_world.images["al2023/x86_64/standard"]
    kube.create(
        {**nodeclass("default"), "status": {"amis": [{"id": current_ami, "name": "al2023", "requirements": []}]}}
    )
    current = launch_template(aws_world, owned_tags(cluster, "default"), image=current_ami)
    old_ami = launch_template(aws_world, owned_tags(cluster, "default"), image="ami-0000000000000001d")
    of_removed_class = launch_template(aws_world, owned_tags(cluster, "removed"), image=current_ami)
    profiles = {
        name: instance_profile(
            aws_world, instance_profile_name(cluster, REGION, name), profile_tags(cluster, name), role=aws_world.role
        )
        for name in ("default", "removed", "removed-but-running")
    }
    running = launch(aws_world, cluster, nodeclass="removed-but-running")
    kube.create(registered_nodeclaim("draining", running, "node-draining", nodeclass_name="removed-but-running"))
    clock.offset = timedelta(hours=1)

    answer = collect()

    assert sorted(answer["collected"]["LaunchTemplate"]) == sorted([old_ami, of_removed_class])
    assert answer["collected"]["InstanceProfile"] == [profiles["removed"]] and not answer["failures"]
    assert existing_templates(aws_world, current, old_ami, of_removed_class) == {current}
    remaining = profile_names(aws_world)
    assert {profiles["default"], profiles["removed-but-running"]} <= remaining and profiles["removed"] not in remaining
    recorded = events(kube)
    assert recorded[("LaunchTemplateGarbageCollected", "default")].endswith(
        "AMI ami-0000000000000001d is no longer among EC2NodeClass default's AMIs"
    )
    assert recorded[("InstanceProfileGarbageCollected", "removed")] == (
        f"InstanceProfile {profiles['removed']} deleted: its EC2NodeClass removed is gone"
    )
    aws_world.client("ec2").terminate_instances(InstanceIds=[running])


def test_a_pass_waits_while_another_holds_the_lease(
    aws_world: AWSWorld, kube: KubeEmulator, clock: Clock, lambda_environment: LambdaEnvironment, capsys: Any
) -> None:
    leaked = launch(aws_world, lambda_environment.cluster_name)
    expires = int((datetime.now(UTC) + timedelta(seconds=60)).timestamp())
    aws_world.client("dynamodb").put_item(
        TableName=lambda_environment.state_table,
        Item={
            STATE_TABLE_KEY: {"S": LEASE_PREFIX + GARBAGE_COLLECTION_LEASE},
            STATE_TABLE_TTL: {"N": str(expires)},
            "holder": {"S": "a-pass-still-running"},
        },
    )
    clock.offset = timedelta(seconds=31)
    capsys.readouterr()

    assert collect()["skipped"] == "another pass holds the garbage collection lease"
    assert state(aws_world, leaked) == "running"
    assert emitted(capsys.readouterr().out)["karpenter_garbage_collection_skipped_total"] == 1

    clock.offset = timedelta(seconds=61)  # that pass died: its lease expired
    assert collect()["collected"]["Instance"] == [provider_id(leaked)]
    table = aws_world.client("dynamodb").scan(TableName=lambda_environment.state_table)["Items"]
    assert table == []  # released at the end of the pass


def test_an_event_that_is_not_the_schedule_is_skipped_and_counted(
    lambda_environment: LambdaEnvironment, capsys: Any
) -> None:
    capsys.readouterr()
    assert collect(sample_event("forwarder/nodeclaim-deleting.json")) == {
        "skipped": "not an EventBridge scheduled event"
    }
    assert emitted(capsys.readouterr().out)[SKIPPED_EVENTS] == 1


def launch_reserved(world: AWSWorld, cluster: str, reservation_id: str) -> str:
    """An instance our launcher would launch into the reservation: CreateFleet from a template that targets it."""
    ec2 = world.client("ec2")
    template = f"reserved-{reservation_id}"
    ec2.create_launch_template(
        LaunchTemplateName=template,
        LaunchTemplateData={
            "ImageId": world.images["al2023/x86_64/standard"],
            "CapacityReservationSpecification": {
                "CapacityReservationPreference": "capacity-reservations-only",
                "CapacityReservationTarget": {"CapacityReservationId": reservation_id},
            },
        },
    )
    tags = [{"Key": k, "Value": v} for k, v in launch_tags(cluster, "default", "default", None).items()]
    answer = ec2.create_fleet(
        Type="instant",
        LaunchTemplateConfigs=[
            {
                "LaunchTemplateSpecification": {"LaunchTemplateName": template, "Version": "$Latest"},
                "Overrides": [{"InstanceType": "m5.large", "SubnetId": world.subnets["us-west-2a"]}],
            }
        ],
        TargetCapacitySpecification={"DefaultTargetCapacityType": "on-demand", "TotalTargetCapacity": 1},
        TagSpecifications=[{"ResourceType": "instance", "Tags": tags}],
    )
    return str(answer["Instances"][0]["InstanceIds"][0])


def test_a_reserved_node_whose_reservation_is_cancelled_is_relabelled_on_demand(
    aws_world: AWSWorld, kube: KubeEmulator, clock: Clock, lambda_environment: LambdaEnvironment
) -> None:
    """EC2 keeps the instances of a cancelled reservation running as on-demand ones; the next pass relabels the
    NodeClaim and its Node (Karpenter's capacityreservation.capacitytype controller)."""
    rid = aws_world.reserve("m5.large", "us-west-2a", 1, match_criteria="targeted")
    instance_id = launch_reserved(aws_world, lambda_environment.cluster_name, rid)
    reserved = {
        wk.LABEL_CAPACITY_TYPE: wk.CAPACITY_TYPE_RESERVED,
        wk.LABEL_CAPACITY_RESERVATION_ID: rid,
        wk.LABEL_CAPACITY_RESERVATION_TYPE: "default",
        wk.LABEL_CAPACITY_RESERVATION_INTERRUPTIBLE: "false",
    }
    claim = registered_nodeclaim("reserved", instance_id, "node-reserved")
    claim["metadata"]["labels"] = {**claim["metadata"].get("labels", {}), **reserved}
    kube.create(claim)
    registered = node("node-reserved", instance_id, ready=True)
    registered["metadata"]["labels"] = {**reserved, wk.LABEL_REGISTERED: "true"}
    kube.create(registered)

    def labels(kind: str, api_version: str, name: str) -> dict[str, str]:
        stored = kube.get(api_version, kind, name)
        assert stored is not None
        return dict(stored["metadata"]["labels"])

    assert collect()["demoted_to_on_demand"] == []  # the reservation still holds the instance
    aws_world.client("ec2").cancel_capacity_reservation(CapacityReservationId=rid)
    assert state(aws_world, instance_id) == "running"

    answer = collect()

    assert answer["demoted_to_on_demand"] == ["NodeClaim/reserved", "Node/node-reserved"]
    for kind, api_version, name in (("NodeClaim", "karpenter.sh/v1", "reserved"), ("Node", "v1", "node-reserved")):
        now = labels(kind, api_version, name)
        assert now[wk.LABEL_CAPACITY_TYPE] == wk.CAPACITY_TYPE_ON_DEMAND
        assert not [k for k in now if "capacity-reservation" in k]
    assert collect()["demoted_to_on_demand"] == []  # converged
