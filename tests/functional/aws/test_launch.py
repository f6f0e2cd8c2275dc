"""Launching through CreateFleet against moto over HTTP: what is asked of EC2 and what comes back."""

from __future__ import annotations

import base64
import threading
from typing import Any

import pytest
from botocore.config import Config

from autoscaler.apis.v1 import labels as wk
from autoscaler.cloudprovider.errors import (
    InsufficientCapacityError,
    NodeClassNotReadyError,
    OfferingKey,
    TransientCloudError,
)
from autoscaler.providers.aws.clients import CLIENT_CONFIG, AWSClients
from autoscaler.providers.aws.ec2instance import instance_id
from autoscaler_dev.world.aws_world import CLUSTER, REGION, ZONES, AWSWorld
from tests.functional.aws.helpers import claim, hashed, instance, provider, tags_of

ON_DEMAND = (wk.LABEL_CAPACITY_TYPE, "In", [wk.CAPACITY_TYPE_ON_DEMAND])
AMD64 = (wk.LABEL_ARCH, "In", [wk.ARCH_AMD64])


def recorded_fleets(provider_: Any) -> list[dict[str, Any]]:
    """Every CreateFleet request the provider sends, as sent."""
    requests: list[dict[str, Any]] = []
    provider_.aws.clients.ec2.meta.events.register(
        "provide-client-params.ec2.CreateFleet", lambda params, **_: requests.append(dict(params))
    )
    return requests


def template_data(world: AWSWorld, name: str) -> dict[str, Any]:
    versions = world.client("ec2").describe_launch_template_versions(LaunchTemplateName=name)
    return dict(versions["LaunchTemplateVersions"][0]["LaunchTemplateData"])


def test_a_launch_tags_exactly_and_boots_with_imds_defaults(aws_world: AWSWorld) -> None:
    nodeclass = hashed(aws_world.nodeclass("default", tags={"team": "payments"}))
    cloud = provider(aws_world, nodeclass)
    fleets = recorded_fleets(cloud)
    launched = cloud.create(claim("tagged", "default", ON_DEMAND, AMD64))

    raw = instance(aws_world, instance_id(launched.status.provider_id))  # type: ignore[union-attr]
    expected = {
        f"kubernetes.io/cluster/{CLUSTER}": "owned",
        wk.TAG_NODEPOOL: "default",
        wk.TAG_CLUSTER_NAME: CLUSTER,
        wk.TAG_NODECLASS: "default",
        "team": "payments",
    }
    # Launched with exactly the launch tags (no karpenter.sh/managed-by), then tagged with its NodeClaim at
    # once so that a retried launch finds it whatever the retry's request looks like.
    assert tags_of(raw) == {**expected, wk.TAG_NODECLAIM: "tagged"}
    (request,) = fleets
    by_resource = {
        spec["ResourceType"]: {t["Key"]: t["Value"] for t in spec["Tags"]} for spec in request["TagSpecifications"]
    }
    assert by_resource["instance"] == expected and by_resource["volume"] == expected
    assert request["Type"] == "instant" and request["OnDemandOptions"] == {"AllocationStrategy": "lowest-price"}
    assert request["ClientToken"] == "sk-uid-tagged"

    template = request["LaunchTemplateConfigs"][0]["LaunchTemplateSpecification"]["LaunchTemplateName"]
    assert template.startswith("karpenter.k8s.aws/")
    data = template_data(aws_world, template)
    assert data["MetadataOptions"]["HttpPutResponseHopLimit"] == 1
    assert data["MetadataOptions"]["HttpTokens"] == "required"
    assert "NetworkInterfaces" not in data  # no public-IP choice: EC2 follows the subnet
    eni_tags = next(s for s in data["TagSpecifications"] if s["ResourceType"] == "network-interface")
    assert {t["Key"]: t["Value"] for t in eni_tags["Tags"]} == expected
    assert data["BlockDeviceMappings"] == [
        {"DeviceName": "/dev/xvda", "Ebs": {"Encrypted": True, "VolumeSize": 20, "VolumeType": "gp3"}}
    ]
    user_data = base64.b64decode(data["UserData"]).decode()
    assert "apiVersion: node.eks.aws/v1alpha1" in user_data and "karpenter.sh/unregistered" in user_data

    assert launched.status.image_id == aws_world.images["al2023/x86_64/standard"]  # type: ignore[union-attr]
    assert launched.metadata.labels[wk.LABEL_CAPACITY_TYPE] == wk.CAPACITY_TYPE_ON_DEMAND  # type: ignore[index]
    assert (
        launched.metadata.annotations[wk.ANNOTATION_NODECLASS_HASH]
        == nodeclass.metadata.annotations[wk.ANNOTATION_NODECLASS_HASH]
    )  # type: ignore[index]
    assert launched.status.allocatable and launched.status.capacity  # type: ignore[union-attr]


@pytest.mark.parametrize("public", [True, False])
def test_public_ip_follows_the_class_field_only(aws_world: AWSWorld, public: bool) -> None:
    nodeclass = aws_world.nodeclass(f"public-{public}", associatePublicIPAddress=public)
    cloud = provider(aws_world, nodeclass)
    fleets = recorded_fleets(cloud)
    cloud.create(claim(f"ip-{public}", nodeclass.name, ON_DEMAND, AMD64))
    name = fleets[0]["LaunchTemplateConfigs"][0]["LaunchTemplateSpecification"]["LaunchTemplateName"]
    interfaces = template_data(aws_world, name)["NetworkInterfaces"]
    assert interfaces[0]["AssociatePublicIpAddress"] is public
    assert interfaces[0]["Groups"] == [aws_world.security_group]


def test_spot_is_chosen_when_allowed_with_price_capacity_optimized(aws_world: AWSWorld) -> None:
    cloud = provider(aws_world, aws_world.nodeclass("default"))
    fleets = recorded_fleets(cloud)
    launched = cloud.create(claim("spot", "default", (wk.LABEL_CAPACITY_TYPE, "In", ["spot", "on-demand"]), AMD64))
    request = fleets[0]
    assert request["TargetCapacitySpecification"]["DefaultTargetCapacityType"] == "spot"
    assert request["SpotOptions"] == {"AllocationStrategy": "price-capacity-optimized"}
    assert launched.metadata.labels[wk.LABEL_CAPACITY_TYPE] == "spot"  # type: ignore[index]
    overrides = request["LaunchTemplateConfigs"][0]["Overrides"]
    assert {o["AvailabilityZone"] for o in overrides} == set(ZONES)  # one subnet per zone
    assert {o["SubnetId"] for o in overrides} == set(aws_world.subnets.values())


def test_capacity_errors_fall_through_then_mark_offerings_unavailable(aws_world: AWSWorld) -> None:
    cloud = provider(aws_world, aws_world.nodeclass("default"))
    with aws_world.fleet_capacity(cloud.aws.clients, lambda o: o["InstanceType"] == "m5.large"):
        launched = cloud.create(claim("fallthrough", "default", ON_DEMAND, AMD64))
    assert launched.metadata.labels[wk.LABEL_INSTANCE_TYPE] != "m5.large"  # type: ignore[index]
    assert OfferingKey("m5.large", "us-west-2a", "on-demand") in cloud.aws.unavailable.unavailable()

    with (
        aws_world.fleet_capacity(cloud.aws.clients, lambda o: True),
        pytest.raises(InsufficientCapacityError) as raised,
    ):
        cloud.create(claim("exhausted", "default", ON_DEMAND, AMD64))
    assert raised.value.offerings and "InsufficientInstanceCapacity" in str(raised.value)
    unavailable = cloud.aws.unavailable.unavailable()
    assert all(key in unavailable for key in raised.value.offerings)
    # The next pass sees them: every offering that failed is flagged on the instance types.
    flagged = {
        (it.name, o.zone)
        for it in cloud.aws.catalog.instance_types(cloud._ready_nodeclass("default"), None, unavailable)
        for o in it.offerings
        if o.capacity_type == "on-demand" and not o.available
    }
    assert {(k.instance_type, k.zone) for k in raised.value.offerings} <= flagged


def test_identical_launches_share_one_fleet_call(aws_world: AWSWorld) -> None:
    cloud = provider(aws_world, aws_world.nodeclass("default"))
    fleets = recorded_fleets(cloud)
    first, second, other = cloud.create_many(
        [
            claim("twin-a", "default", ON_DEMAND, AMD64),
            claim("twin-b", "default", ON_DEMAND, AMD64),
            claim("loner", "default", ON_DEMAND, AMD64, nodepool="batch"),
        ]
    )
    assert sorted(f["TargetCapacitySpecification"]["TotalTargetCapacity"] for f in fleets) == [1, 2]
    ids = {c.status.provider_id for c in (first, second, other)}  # type: ignore[union-attr]
    assert len(ids) == 3


def test_different_launches_go_to_ec2_side_by_side_on_templates_made_once(aws_world: AWSWorld) -> None:
    """Each CreateFleet takes a second or two: two groups' calls are in flight together (the first waits at a
    barrier the second must reach; one after the other, the barrier breaks and the launches fail), and the
    launch templates they share are created once, not once per group."""
    cloud = provider(aws_world, aws_world.nodeclass("side-by-side", tags={"test": "side-by-side"}))
    both_in_flight = threading.Barrier(2, timeout=10)
    created: list[str] = []
    events = cloud.aws.clients.ec2.meta.events

    def meet(**_: Any) -> None:  # answers None: anything else from a before-call handler stands in for EC2's answer
        both_in_flight.wait()

    events.register("before-call.ec2.CreateFleet", meet)
    events.register(
        "provide-client-params.ec2.CreateLaunchTemplate",
        lambda params, **_: created.append(params["LaunchTemplateName"]),
    )
    zonal = [claim(f"in-{z}", "side-by-side", ON_DEMAND, AMD64, (wk.LABEL_ZONE, "In", [z])) for z in ZONES[:2]]
    launched = cloud.create_many(zonal)
    assert all(not isinstance(c, Exception) and c.status.provider_id for c in launched), launched
    assert created and len(created) == len(set(created))


def test_nodeclaim_tags_are_written_beside_the_launch_and_settled_after(aws_world: AWSWorld) -> None:
    """One CreateTags per instance meets EC2's CreateTags bucket: the launch answers without waiting for them (the
    tagging waits until the answer is in, which it could not if the launch waited for it), and settling the
    launches waits until every instance carries its NodeClaim's name."""
    cloud = provider(aws_world, aws_world.nodeclass("default"))
    answered, released = threading.Event(), []

    def after_the_answer(**_: Any) -> None:  # None: the call goes on to EC2
        released.append(answered.wait(timeout=10))

    cloud.aws.clients.ec2.meta.events.register("before-call.ec2.CreateTags", after_the_answer)
    launched = cloud.create_many([claim(f"beside-{i}", "default", ON_DEMAND, AMD64) for i in range(2)])
    answered.set()
    cloud.settle_launches()
    assert released == [True, True]
    for claim_ in launched:
        raw = instance(aws_world, instance_id(claim_.status.provider_id))  # type: ignore[union-attr]
        assert tags_of(raw)[wk.TAG_NODECLAIM] == claim_.name


def test_a_retried_launch_gets_the_same_instance(aws_world: AWSWorld) -> None:
    cloud = provider(aws_world, aws_world.nodeclass("default"))
    served = aws_world.fleet_behaves_like_ec2(cloud.aws.clients)
    once = cloud.create(claim("retried", "default", ON_DEMAND, AMD64, uid="7f1e0c52-retry"))
    again = provider(aws_world, aws_world.nodeclass("default"), clients=cloud.aws.clients).create(
        claim("retried", "default", ON_DEMAND, AMD64, uid="7f1e0c52-retry")
    )
    assert once.status.provider_id == again.status.provider_id  # type: ignore[union-attr]
    assert len(served) == 1


def test_an_instance_already_tagged_for_the_nodeclaim_is_returned_not_relaunched(aws_world: AWSWorld) -> None:
    cloud = provider(aws_world, aws_world.nodeclass("default"))
    first = cloud.create(claim("registered", "default", ON_DEMAND, AMD64))
    cloud.tag_registered(first, "ip-10-0-0-1.ec2.internal")
    fleets = recorded_fleets(cloud)
    again = cloud.create(claim("registered", "default", ON_DEMAND, AMD64, uid="another-uid"))
    assert again.status.provider_id == first.status.provider_id and fleets == []  # type: ignore[union-attr]
    raw = instance(aws_world, instance_id(first.status.provider_id))  # type: ignore[union-attr]
    assert tags_of(raw)[wk.TAG_NAME] == "ip-10-0-0-1.ec2.internal"


def test_a_relaunch_whose_type_was_marked_unavailable_since_still_gets_its_capacity(aws_world: AWSWorld) -> None:
    # A pass launched it but lost its status write; before the next pass, the type's offering was marked
    # unavailable, so it is no longer a candidate: the instance comes back, and so must its capacity.
    cloud = provider(aws_world, aws_world.nodeclass("default"))
    first = cloud.create(claim("status-lost", "default", ON_DEMAND, AMD64))
    launched_type = first.metadata.labels[wk.LABEL_INSTANCE_TYPE]  # type: ignore[index]
    for zone in ZONES:
        cloud.aws.unavailable.mark_unavailable(OfferingKey(launched_type, zone, "on-demand"), "test")
    fleets = recorded_fleets(cloud)
    again = cloud.create(claim("status-lost", "default", ON_DEMAND, AMD64))
    assert fleets == [] and again.status.provider_id == first.status.provider_id  # type: ignore[union-attr]
    assert again.status.allocatable == first.status.allocatable and again.status.allocatable  # type: ignore[union-attr]
    assert again.status.capacity == first.status.capacity  # type: ignore[union-attr]


def test_a_launch_template_deleted_behind_our_back_is_recreated(aws_world: AWSWorld) -> None:
    cloud = provider(aws_world, aws_world.nodeclass("default"))
    fleets = recorded_fleets(cloud)
    cloud.create(claim("lt-a", "default", ON_DEMAND, AMD64))
    name = fleets[0]["LaunchTemplateConfigs"][0]["LaunchTemplateSpecification"]["LaunchTemplateName"]
    aws_world.client("ec2").delete_launch_template(LaunchTemplateName=name)
    cloud.create(claim("lt-b", "default", ON_DEMAND, AMD64))  # the cached name fails once, then is recreated
    assert aws_world.client("ec2").describe_launch_templates(LaunchTemplateNames=[name])["LaunchTemplates"]


def test_throttling_is_retried_and_persistent_throttling_is_transient(aws_world: AWSWorld) -> None:
    cloud = provider(aws_world, aws_world.nodeclass("default"))
    with aws_world.throttle(cloud.aws.clients, "ec2", "CreateFleet", times=1) as throttled:
        cloud.create(claim("throttled-once", "default", ON_DEMAND, AMD64))
    assert throttled == [1]
    # Persistent throttling outlasts the retries (one retry here, to keep the test short).
    impatient = AWSClients(REGION, aws_world.endpoint, config=CLIENT_CONFIG.merge(Config(retries={"max_attempts": 1})))
    cloud = provider(aws_world, aws_world.nodeclass("default"), clients=impatient)
    with (
        aws_world.throttle(impatient, "ec2", "CreateFleet", times=100) as throttled,
        pytest.raises(TransientCloudError, match="RequestLimitExceeded"),
    ):
        cloud.create(claim("throttled-always", "default", ON_DEMAND, AMD64))
    assert len(throttled) == 2  # the call and its retry


def test_a_class_that_is_not_ready_refuses_to_launch(aws_world: AWSWorld) -> None:
    cloud = provider(aws_world, aws_world.nodeclass("pending", ready=False))
    with pytest.raises(NodeClassNotReadyError, match="not Ready"):
        cloud.create(claim("early", "pending", ON_DEMAND))
    with pytest.raises(NodeClassNotReadyError, match="does not exist"):
        cloud.create(claim("orphan", "missing", ON_DEMAND))


def test_requirements_nothing_satisfies_are_insufficient_capacity(aws_world: AWSWorld) -> None:
    cloud = provider(aws_world, aws_world.nodeclass("default"))
    with pytest.raises(InsufficientCapacityError, match="meets the NodeClaim's requirements"):
        cloud.create(claim("huge", "default", ON_DEMAND, requests={"cpu": "512"}))


def test_a_merged_launch_retried_in_another_group_launches_nothing_twice(aws_world: AWSWorld) -> None:
    """A pass launches two identical NodeClaims in one CreateFleet call and is cut short before recording
    them; the retry batches them with a third. The token differs (the group differs), so only the tags
    written at launch keep the first two from launching again."""
    cloud = provider(aws_world, aws_world.nodeclass("default"))
    served = aws_world.fleet_behaves_like_ec2(cloud.aws.clients)
    first = cloud.create_many(
        [claim("crash-a", "default", ON_DEMAND, AMD64), claim("crash-b", "default", ON_DEMAND, AMD64)]
    )
    retry = cloud.create_many(
        [
            claim("crash-a", "default", ON_DEMAND, AMD64),
            claim("crash-b", "default", ON_DEMAND, AMD64),
            claim("crash-c", "default", ON_DEMAND, AMD64),
        ]
    )
    ids = [c.status.provider_id for c in retry]  # type: ignore[union-attr]
    assert ids[:2] == [c.status.provider_id for c in first]  # type: ignore[union-attr]
    assert len(set(ids)) == 3
    assert [sum(len(i["InstanceIds"]) for i in f["Instances"]) for f in served] == [2, 1]  # 3 instances in all


def test_a_launch_carries_the_class_shape_fields(aws_world: AWSWorld) -> None:
    nodeclass = aws_world.nodeclass(
        "shaped",
        ipPrefixCount=2,
        connectionTracking={"tcpEstablishedTimeout": 3600},
        cpuOptions={"nestedVirtualization": "disabled"},
    )
    cloud = provider(aws_world, nodeclass)
    fleets = recorded_fleets(cloud)
    cloud.create(claim("shaped-1", nodeclass.name, ON_DEMAND, AMD64))
    name = fleets[0]["LaunchTemplateConfigs"][0]["LaunchTemplateSpecification"]["LaunchTemplateName"]
    data = template_data(aws_world, name)
    primary = data["NetworkInterfaces"][0]
    assert primary["Ipv4PrefixCount"] == 2 and primary["DeviceIndex"] == 0
    assert data["CpuOptions"]["NestedVirtualization"] == "disabled"
