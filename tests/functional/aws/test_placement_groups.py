"""Placement groups against moto over HTTP and the world's placement groups (``ec2_placement``): what a class
resolves, what a launch asks of EC2, and what each strategy's rules do to launches and to the unavailable
offerings they leave behind."""

from __future__ import annotations

import pytest

from autoscaler.apis.v1 import labels as wk
from autoscaler.cloudprovider.errors import CreateError, InsufficientCapacityError, NodeClassNotReadyError
from autoscaler.cloudprovider.nodeclass import NothingMatchedError
from autoscaler.cloudprovider.types import InstanceType
from autoscaler.controllers.nodeclass import PLACEMENT_GROUP_READY, NodeClassController
from autoscaler.providers.aws import drift
from autoscaler.providers.aws.ec2instance import Instance, instance_id
from autoscaler_dev.world.aws_world import AWSWorld
from autoscaler_dev.world.ec2_placement import SPREAD_PER_ZONE
from tests.functional.aws.helpers import claim, instance, provider, unique
from tests.functional.aws.test_launch import ON_DEMAND, recorded_fleets, template_data
from tests.support.iam_gates import gated, synthesized, without_resource

AMD64 = (wk.LABEL_ARCH, "In", [wk.ARCH_AMD64])
LARGE = (wk.LABEL_INSTANCE_TYPE, "In", ["m5.large"])


def group_id(world: AWSWorld, name: str) -> str:
    (group,) = world.client("ec2").describe_placement_groups(GroupNames=[name])["PlacementGroups"]
    return str(group["GroupId"])


def new_group(world: AWSWorld, strategy: str, **extra: int) -> str:
    name = unique(f"pg-{strategy}")
    world.client("ec2").create_placement_group(GroupName=name, Strategy=strategy, **extra)  # type: ignore[arg-type]
    return name


def test_the_class_resolves_its_group_by_name_or_id_and_says_when_there_is_none(aws_world: AWSWorld) -> None:
    resolver = provider(aws_world).aws.resolver
    wanted = group_id(aws_world, "world-partition")
    by_name = aws_world.nodeclass("pg-by-name", ready=False, placementGroupSelector={"name": "world-partition"})
    by_id = aws_world.nodeclass("pg-by-id", ready=False, placementGroupSelector={"id": wanted})
    assert resolver.placement_group(by_name) == resolver.placement_group(by_id) == wanted
    assert resolver.placement_group(aws_world.nodeclass("pg-none", ready=False)) is None
    missing = aws_world.nodeclass("pg-missing", ready=False, placementGroupSelector={"name": "no-such-group"})
    with pytest.raises(NothingMatchedError, match="no-such-group"):
        resolver.placement_group(missing)
    status, _ = NodeClassController(None, resolver).resolve_status(missing)  # type: ignore[arg-type]
    condition = next(c for c in status.conditions or [] if c.type == PLACEMENT_GROUP_READY)
    ready = next(c for c in status.conditions or [] if c.type == "Ready")
    assert (condition.status, condition.reason) == ("False", "PlacementGroupNotFound")
    assert ready.status == "False"


def test_a_launch_goes_into_the_group_and_its_node_carries_the_group_and_partition(aws_world: AWSWorld) -> None:
    nodeclass = aws_world.nodeclass("pg-partition", placementGroupSelector={"name": "world-partition"})
    cloud = provider(aws_world, nodeclass)
    fleets = recorded_fleets(cloud)
    launched = cloud.create(claim("in-partition", nodeclass.name, ON_DEMAND, AMD64))
    wanted = group_id(aws_world, "world-partition")
    name = fleets[0]["LaunchTemplateConfigs"][0]["LaunchTemplateSpecification"]["LaunchTemplateName"]
    assert template_data(aws_world, name)["Placement"] == {"GroupId": wanted}
    labels = launched.metadata.labels or {}
    assert labels[wk.LABEL_PLACEMENT_GROUP_ID] == wanted
    assert labels[wk.LABEL_PLACEMENT_GROUP_PARTITION] in {"1", "2", "3"}
    raw = instance(aws_world, instance_id(launched.status.provider_id))  # type: ignore[union-attr]
    assert raw["Placement"]["GroupId"] == wanted


def test_a_cluster_group_keeps_every_launch_in_the_zone_of_its_first(aws_world: AWSWorld) -> None:
    name = new_group(aws_world, "cluster")
    nodeclass = aws_world.nodeclass(unique("pg-cluster"), placementGroupSelector={"name": name})
    cloud = provider(aws_world, nodeclass)
    zones = {
        (cloud.create(claim(unique("clustered"), nodeclass.name, ON_DEMAND, AMD64)).metadata.labels or {})[
            wk.LABEL_ZONE
        ]
        for _ in range(3)
    }
    assert len(zones) == 1
    wanted = group_id(aws_world, name)
    group = cloud.aws.placement_groups.resolve(nodeclass.spec.placement_group_selector)
    types = cloud.aws.catalog.instance_types(nodeclass, None, frozenset(), group)
    assert types and all(t.labels[wk.LABEL_PLACEMENT_GROUP_ID] == wanted for t in types)


def test_a_full_spread_zone_is_unavailable_for_that_group_only(aws_world: AWSWorld) -> None:
    name = new_group(aws_world, "spread")
    zone = "us-west-2a"
    in_zone = (wk.LABEL_ZONE, "In", [zone])
    spread = aws_world.nodeclass(unique("pg-spread"), placementGroupSelector={"name": name})
    cloud = provider(aws_world, spread)
    for _ in range(SPREAD_PER_ZONE):
        cloud.create(claim(unique("spread"), spread.name, ON_DEMAND, AMD64, in_zone))
    with pytest.raises(InsufficientCapacityError, match="spread placement group") as refused:
        cloud.create(claim(unique("eighth"), spread.name, ON_DEMAND, AMD64, in_zone))
    wanted = group_id(aws_world, name)
    assert refused.value.offerings and {(k.zone, k.placement_group) for k in refused.value.offerings} == {
        (zone, wanted)
    }
    # The limit is the group's: every type the launch could take is marked in that zone (not only the one EC2
    # named), for this group only.
    marked = {k.instance_type for k in refused.value.offerings}
    zone_on_demand = (zone, wk.CAPACITY_TYPE_ON_DEMAND)
    assert len(marked) > 1
    unavailable = cloud.aws.unavailable.unavailable()
    group = cloud.aws.placement_groups.resolve(spread.spec.placement_group_selector)

    def in_zone_available(types: list[InstanceType]) -> list[bool]:
        return [
            o.available
            for t in types
            if t.name in marked
            for o in t.offerings
            if (o.zone, o.capacity_type) == zone_on_demand
        ]

    outside = in_zone_available(cloud.aws.catalog.instance_types(aws_world.nodeclass("pg-outside"), None, unavailable))
    inside = in_zone_available(cloud.aws.catalog.instance_types(spread, None, unavailable, group))
    assert outside and all(outside)
    assert inside and not any(inside)


def test_changing_the_group_drifts_the_nodes_launched_into_the_old_one(aws_world: AWSWorld) -> None:
    before = aws_world.nodeclass("pg-drift", placementGroupSelector={"name": "world-partition"})
    launched = provider(aws_world, before).create(claim(unique("drifting"), before.name, ON_DEMAND, AMD64))
    live = Instance.from_ec2(instance(aws_world, instance_id(launched.status.provider_id)))  # type: ignore[union-attr]
    assert drift.placement_group_drift(live.placement_group_id, group_id(aws_world, "world-partition")) is None
    moved = drift.placement_group_drift(live.placement_group_id, group_id(aws_world, "world-spread"))
    assert moved is not None and moved.reason == drift.PLACEMENT_GROUP_DRIFT
    removed = drift.placement_group_drift(live.placement_group_id, "")
    assert removed is not None and "no placement group" in removed.message


def test_a_class_whose_group_is_gone_does_not_launch(aws_world: AWSWorld) -> None:
    name = new_group(aws_world, "cluster")
    nodeclass = aws_world.nodeclass(unique("pg-gone"), placementGroupSelector={"name": name})
    aws_world.client("ec2").delete_placement_group(GroupName=name)
    with pytest.raises(NodeClassNotReadyError, match="placement group"):
        provider(aws_world, nodeclass).create(claim(unique("nowhere"), nodeclass.name, ON_DEMAND, AMD64))


@pytest.mark.parametrize("granted", [True, False])
def test_a_launch_into_a_group_needs_the_group_in_the_launch_statement(aws_world: AWSWorld, granted: bool) -> None:
    """The provisioner's synthesized role, enforced: it launches into the group, and without ``placement-group/*``
    among the launch statement's resources the same CreateFleet is denied as AWS denies it."""
    stack = synthesized()
    clients, iam = gated(aws_world, stack if granted else without_resource(stack, "placement-group/*"), "provisioner")
    nodeclass = aws_world.nodeclass(unique("pg-iam"), placementGroupSelector={"name": "world-partition"})
    cloud = provider(aws_world, nodeclass, clients=clients)
    if granted:
        launched = cloud.create(claim(unique("allowed"), nodeclass.name, ON_DEMAND, AMD64))
        assert (launched.metadata.labels or {})[wk.LABEL_PLACEMENT_GROUP_ID] == group_id(aws_world, "world-partition")
        assert iam.denied == 0
        return
    with pytest.raises(CreateError, match="UnauthorizedOperation"):
        cloud.create(claim(unique("denied"), nodeclass.name, ON_DEMAND, AMD64))
    assert iam.denied and any("placement-group" in d.resource for d in iam.denials)
