"""What garbage collection may list and delete, against moto over HTTP: launch templates and instance profiles
carrying the cluster's tags (and nothing else, whatever its name), leases in the state table, the instance listing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from autoscaler.apis.v1 import labels as wk
from autoscaler.providers.aws.instanceprofiles import InstanceProfiles
from autoscaler.providers.aws.launchtemplates import LaunchTemplates
from autoscaler.providers.aws.leases import DynamoDBLeases
from autoscaler.runtime import cloud_provider
from autoscaler.settings import STATE_TABLE_KEY, Settings
from autoscaler_dev.world.aws_world import REGION, AWSWorld
from tests.functional.aws.helpers import (
    existing_templates,
    instance_profile,
    launch_template,
    owned_tags,
    profile_names,
    profile_tags,
    unique,
)
from tests.support.lambdas import state_table


def test_launch_templates_of_the_cluster_are_listed_with_their_ami_and_deleted(aws_world: AWSWorld) -> None:
    cluster, other = unique("lt"), unique("lt-other")
    ours = launch_template(aws_world, owned_tags(cluster, "default"), image="ami-0aaaaaaaaaaaaaaaa")
    theirs = launch_template(aws_world, owned_tags(other, "default"))
    half_marked = launch_template(aws_world, {**owned_tags(other, "default"), wk.TAG_LAUNCH_TEMPLATE_CLUSTER: cluster})
    no_nodepool = owned_tags(cluster, "default")
    del no_nodepool[wk.TAG_NODEPOOL]
    unpooled = launch_template(aws_world, no_nodepool)

    templates = LaunchTemplates(aws_world.clients(), cluster)
    (listed,) = templates.list_owned()
    assert (listed.name, listed.nodeclass, listed.image_id) == (ours, "default", "ami-0aaaaaaaaaaaaaaaa")
    assert listed.created_at is not None and listed.created_at <= datetime.now(UTC)

    assert templates.delete_owned(listed) is True
    assert templates.delete_owned(listed) is False  # already gone
    assert existing_templates(aws_world, ours, theirs, half_marked, unpooled) == {theirs, half_marked, unpooled}


def test_instance_profiles_of_the_cluster_in_this_region_are_listed_and_deleted(aws_world: AWSWorld) -> None:
    cluster = unique("ip")
    ours = instance_profile(aws_world, f"{cluster}_1", profile_tags(cluster, "gone"), role=aws_world.role)
    # Named like ours, but another cluster's, another region's, or untagged: never listed, never deleted.
    lookalikes = {
        instance_profile(aws_world, f"{cluster}_2", profile_tags(unique("other"), "gone")),
        instance_profile(aws_world, f"{cluster}_3", profile_tags(cluster, "gone", region="eu-west-1")),
        instance_profile(aws_world, f"{cluster}_4", {}),
    }
    profiles = InstanceProfiles(aws_world.clients(), REGION, cluster)
    (listed,) = profiles.list_owned()
    assert (listed.name, listed.nodeclass, listed.roles) == (ours, "gone", (aws_world.role,))

    assert profiles.delete_owned(listed) is True  # its role is removed first, as IAM requires
    assert profiles.delete_owned(listed) is False
    names = profile_names(aws_world)
    assert ours not in names and lookalikes <= names


def test_a_lease_is_held_by_one_pass_until_released_or_expired(aws_world: AWSWorld) -> None:
    table = state_table(aws_world)
    clock = {"now": datetime(2026, 5, 1, 12, 0, tzinfo=UTC)}
    leases = DynamoDBLeases(aws_world.clients(), table, lambda: clock["now"])
    ttl = timedelta(seconds=90)

    assert leases.acquire("gc", "pass-a", ttl)
    assert not leases.acquire("gc", "pass-b", ttl)
    assert leases.acquire("gc", "pass-a", ttl)  # the holder renews
    leases.release("gc", "pass-b")  # not the holder: nothing happens
    assert not leases.acquire("gc", "pass-b", ttl)
    assert leases.acquire("other-lease", "pass-b", ttl)  # leases are independent

    clock["now"] += timedelta(seconds=91)
    assert leases.acquire("gc", "pass-b", ttl)  # pass-a died holding it
    leases.release("gc", "pass-a")  # too late: pass-b keeps it
    assert not leases.acquire("gc", "pass-c", ttl)
    leases.release("gc", "pass-b")
    assert leases.acquire("gc", "pass-c", ttl)
    item = aws_world.client("dynamodb").get_item(TableName=table, Key={STATE_TABLE_KEY: {"S": "lease#gc"}})["Item"]
    assert item["holder"] == {"S": "pass-c"}
    assert item["expiration"] == {"N": str(int((clock["now"] + ttl).timestamp()))}


def test_the_instance_listing_needs_only_describe_instances_and_the_owned_tag(aws_world: AWSWorld) -> None:
    cluster = unique("list")
    ec2 = aws_world.client("ec2")

    def run(owner_value: str) -> str:
        tags = {f"{wk.TAG_CLUSTER_PREFIX}{cluster}": owner_value, wk.TAG_NODEPOOL: "p", wk.TAG_NODECLASS: "c"}
        answer = ec2.run_instances(
            ImageId=aws_world.images["al2023/x86_64/standard"],
            InstanceType="m5.large",
            MinCount=1,
            MaxCount=1,
            SubnetId=next(iter(aws_world.subnets.values())),
            TagSpecifications=[{"ResourceType": "instance", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}],
        )
        return str(answer["Instances"][0]["InstanceId"])

    owned, shared = run("owned"), run("shared")
    clients = aws_world.clients()
    calls: list[str] = []
    clients.ec2.meta.events.register("before-call.ec2", lambda model, **_: calls.append(model.name))
    provider = cloud_provider(Settings(cluster_name=cluster, region=REGION), lambda _: None, clients=clients)
    listed = provider.list()
    assert [c.status.provider_id.rsplit("/", 1)[-1] for c in listed] == [owned]  # type: ignore[union-attr]
    assert shared not in str(listed)  # tagged for the cluster but not "owned": IAM would refuse to terminate it
    assert set(calls) == {"DescribeInstances"}
    assert listed[0].metadata.creation_timestamp and not listed[0].metadata.deletion_timestamp
    ec2.terminate_instances(InstanceIds=[owned, shared])
