"""get / list / delete by provider ID, and drift, against moto over HTTP."""

from __future__ import annotations

from typing import Any

import pytest

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.ec2nodeclass import EC2NodeClass
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.cloudprovider.errors import NodeClaimNotFoundError
from autoscaler.providers.aws import drift
from autoscaler_dev.world.aws_world import CLUSTER, AWSWorld
from tests.functional.aws.helpers import claim, hashed, provider

ON_DEMAND = (wk.LABEL_CAPACITY_TYPE, "In", [wk.CAPACITY_TYPE_ON_DEMAND])
AMD64 = (wk.LABEL_ARCH, "In", [wk.ARCH_AMD64])


def run_instance(world: AWSWorld, nodeclass: str, *, image: str, subnet: str, groups: list[str], **tags: str) -> str:
    """An instance as our launches leave it (moto's fleets ignore the launch template's groups)."""
    launch_tags = {
        f"kubernetes.io/cluster/{CLUSTER}": "owned",
        wk.TAG_NODEPOOL: "default",
        wk.TAG_CLUSTER_NAME: CLUSTER,
        wk.TAG_NODECLASS: nodeclass,
        **tags,
    }
    answer = world.client("ec2").run_instances(
        ImageId=image,
        InstanceType="m5.large",
        MinCount=1,
        MaxCount=1,
        SubnetId=subnet,
        SecurityGroupIds=groups,
        TagSpecifications=[
            {"ResourceType": "instance", "Tags": [{"Key": k, "Value": v} for k, v in launch_tags.items()]}
        ],
    )
    return str(answer["Instances"][0]["InstanceId"])


def as_claim(world: AWSWorld, instance_id: str, nodeclass: EC2NodeClass, **annotations: str) -> NodeClaim:
    raw = world.client("ec2").describe_instances(InstanceIds=[instance_id])["Reservations"][0]["Instances"][0]
    body = claim(f"claim-{instance_id}", nodeclass.name).to_dict()
    body["metadata"]["annotations"] = annotations
    body["status"] = {"providerID": f"aws:///{raw['Placement']['AvailabilityZone']}/{instance_id}"}
    return NodeClaim.model_validate(body)


def test_get_list_and_delete_in_batches(aws_world: AWSWorld) -> None:
    nodeclass = aws_world.nodeclass("listing")
    cloud = provider(aws_world, nodeclass)
    launched = cloud.create_many(
        [claim(f"batch-{i}", "listing", ON_DEMAND, AMD64, nodepool="listing") for i in range(3)]
    )
    ids = [c.status.provider_id for c in launched]  # type: ignore[union-attr]

    calls: list[Any] = []
    cloud.aws.clients.ec2.meta.events.register(
        "provide-client-params.ec2.DescribeInstances", lambda params, **_: calls.append(params)
    )
    found = cloud.get_many([*ids, "aws:///us-west-2a/i-0000000000000dead", "not-a-provider-id"])
    assert len(calls) == 1  # one batched describe for every well-formed ID
    assert all(isinstance(found[i], NodeClaim) for i in ids)
    assert isinstance(found["aws:///us-west-2a/i-0000000000000dead"], NodeClaimNotFoundError)
    assert isinstance(found["not-a-provider-id"], NodeClaimNotFoundError)
    got = cloud.get(ids[0])
    assert got.status.provider_id == ids[0] and got.metadata.labels[wk.LABEL_NODEPOOL] == "listing"  # type: ignore[union-attr,index]
    assert got.status.capacity  # type: ignore[union-attr]

    listed = {c.status.provider_id for c in cloud.list()}  # type: ignore[union-attr]
    assert set(ids) <= listed

    assert cloud.delete_many(launched) == [None, None, None]
    assert all(isinstance(e, NodeClaimNotFoundError) for e in cloud.delete_many(launched))
    with pytest.raises(NodeClaimNotFoundError):
        cloud.delete(launched[0])
    with pytest.raises(NodeClaimNotFoundError):
        cloud.get(ids[0])
    assert not set(ids) & {c.status.provider_id for c in cloud.list()}  # type: ignore[union-attr]


def test_list_returns_only_this_clusters_launches(aws_world: AWSWorld) -> None:
    foreign = aws_world.client("ec2").run_instances(
        ImageId=aws_world.images["al2023/x86_64/standard"], InstanceType="m5.large", MinCount=1, MaxCount=1
    )["Instances"][0]["InstanceId"]
    cloud = provider(aws_world, aws_world.nodeclass("default"))
    assert foreign not in {c.status.provider_id.rsplit("/", 1)[-1] for c in cloud.list()}  # type: ignore[union-attr]


def test_drift_names_what_changed(aws_world: AWSWorld) -> None:
    nodeclass = hashed(aws_world.nodeclass("drifting"))
    current_ami = aws_world.images["al2023/x86_64/standard"]
    subnet = aws_world.subnets["us-west-2a"]
    cloud = provider(aws_world, nodeclass)
    stamped = dict(nodeclass.metadata.annotations or {})

    in_step = run_instance(aws_world, "drifting", image=current_ami, subnet=subnet, groups=[aws_world.security_group])
    assert cloud.is_drifted(as_claim(aws_world, in_step, nodeclass, **stamped)) is None

    old_ami = aws_world.add_image("eks-al2023-old", "x86_64")
    stale = run_instance(aws_world, "drifting", image=old_ami, subnet=subnet, groups=[aws_world.security_group])
    found = cloud.drift(as_claim(aws_world, stale, nodeclass, **stamped))
    assert found is not None and found.reason == drift.AMI_DRIFT and old_ami in found.message

    ec2 = aws_world.client("ec2")
    vpc = ec2.describe_subnets(SubnetIds=[subnet])["Subnets"][0]["VpcId"]
    stray = ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.200.0/24", AvailabilityZone="us-west-2a")["Subnet"]["SubnetId"]
    moved = run_instance(aws_world, "drifting", image=current_ami, subnet=stray, groups=[aws_world.security_group])
    assert cloud.is_drifted(as_claim(aws_world, moved, nodeclass, **stamped)) == drift.SUBNET_DRIFT

    extra = ec2.create_security_group(GroupName="extra", Description="x", VpcId=vpc)["GroupId"]
    grouped = run_instance(
        aws_world, "drifting", image=current_ami, subnet=subnet, groups=[aws_world.security_group, extra]
    )
    assert cloud.is_drifted(as_claim(aws_world, grouped, nodeclass, **stamped)) == drift.SECURITY_GROUP_DRIFT

    old_hash = {**stamped, wk.ANNOTATION_NODECLASS_HASH: "123"}
    assert cloud.is_drifted(as_claim(aws_world, in_step, nodeclass, **old_hash)) == drift.NODECLASS_DRIFT
    other_version = {**old_hash, wk.ANNOTATION_NODECLASS_HASH_VERSION: "v0"}
    assert cloud.is_drifted(as_claim(aws_world, in_step, nodeclass, **other_version)) is None
