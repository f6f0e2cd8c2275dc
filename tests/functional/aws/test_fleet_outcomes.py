"""What the launcher makes of EC2's answers when pools run out (moto over HTTP, the world's EC2 allocating over
finite pools): partial fulfilment, capacity errors per override, and never an instance without its NodeClaim."""

from __future__ import annotations

import pytest
from moto.backends import get_backend

from autoscaler.apis.v1 import labels as wk
from autoscaler.cloudprovider.errors import InsufficientCapacityError, OfferingKey, TransientCloudError
from autoscaler.providers.aws.ec2instance import instance_id
from autoscaler_dev.world.aws_world import ACCOUNT, REGION, ZONES, AWSWorld
from autoscaler_dev.world.ec2_market import CapacitySettings, Pool, PoolRule
from tests.functional.aws.helpers import claim, instance, provider, tags_of

ON_DEMAND = (wk.LABEL_CAPACITY_TYPE, "In", [wk.CAPACITY_TYPE_ON_DEMAND])
AMD64 = (wk.LABEL_ARCH, "In", [wk.ARCH_AMD64])
ONLY = Pool("m5.large", ZONES[2], "on-demand")


def only_room_for(world: AWSWorld, monkeypatch: pytest.MonkeyPatch, pool: Pool, free: int) -> None:
    """Every pool empty but ``pool``, which has ``free`` instances left (the shared world's others count)."""
    live = world.market.live(get_backend("ec2")[ACCOUNT][REGION])[pool]
    rules = [
        PoolRule(instance_type=pool.instance_type, zone=pool.zone, capacity_type="on-demand", instances=live + free),
        PoolRule(instances=0),
    ]
    monkeypatch.setattr(world.market, "capacity", CapacitySettings(pools=rules))


def test_a_partly_filled_fleet_gives_what_it_launched_and_marks_what_ran_out(
    aws_world: AWSWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    cloud = provider(aws_world, aws_world.nodeclass("default"))
    only_room_for(aws_world, monkeypatch, ONLY, 1)
    got, missed = cloud.create_many(
        [claim("partial-a", "default", ON_DEMAND, AMD64), claim("partial-b", "default", ON_DEMAND, AMD64)]
    )
    assert not isinstance(got, Exception) and isinstance(missed, InsufficientCapacityError)
    assert got.metadata.labels[wk.LABEL_ZONE] == ONLY.zone  # type: ignore[index]
    raw = instance(aws_world, instance_id(got.status.provider_id))  # type: ignore[union-attr]
    assert raw["SubnetId"] == aws_world.subnets[ONLY.zone]
    assert tags_of(raw)[wk.TAG_NODECLAIM] in {"partial-a", "partial-b"}
    unavailable = cloud.aws.unavailable.unavailable()
    assert OfferingKey("m5.large", ZONES[0], "on-demand") in missed.offerings  # the pools EC2 said ran out
    assert OfferingKey("m5.large", ONLY.zone, "on-demand") in missed.offerings  # emptied by this very call
    assert set(missed.offerings) <= unavailable
    # The retry of the NodeClaim that missed out finds nothing where it was told nothing is left.
    with pytest.raises(InsufficientCapacityError):
        cloud.create(claim("partial-c", "default", ON_DEMAND, AMD64))


def test_a_cache_that_cannot_take_the_marks_loses_no_instance(
    aws_world: AWSWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    cloud = provider(aws_world, aws_world.nodeclass("default"))
    only_room_for(aws_world, monkeypatch, ONLY, 1)

    def unreachable(*_: object, **__: object) -> None:
        raise TransientCloudError("marking an offering unavailable: ProvisionedThroughputExceededException")

    monkeypatch.setattr(cloud.aws.unavailable, "mark_unavailable", unreachable)
    got, missed = cloud.create_many(
        [claim("unmarked-a", "default", ON_DEMAND, AMD64), claim("unmarked-b", "default", ON_DEMAND, AMD64)]
    )
    assert isinstance(missed, InsufficientCapacityError)
    raw = instance(aws_world, instance_id(got.status.provider_id))  # type: ignore[union-attr]
    assert tags_of(raw)[wk.TAG_NODECLAIM] in {"unmarked-a", "unmarked-b"}  # launched, returned and tagged


def test_a_retry_whose_request_changed_since_launches_instead_of_failing_for_ever(aws_world: AWSWorld) -> None:
    """A pass launched and was cut short before it tagged the instance; offerings were marked unavailable since,
    so the retry's request differs under the same ClientToken, which EC2 refuses with IdempotentParameterMismatch.
    The retry asks again under a token of its own (the untagged instance is garbage collection's)."""
    cloud = provider(aws_world, aws_world.nodeclass("default"))
    first = cloud.create(claim("cut-short", "default", ON_DEMAND, AMD64, uid="uid-cut-short"))
    first_id = instance_id(first.status.provider_id)  # type: ignore[union-attr]
    aws_world.client("ec2").delete_tags(Resources=[first_id], Tags=[{"Key": wk.TAG_NODECLAIM}])
    zone, instance_type = first.metadata.labels[wk.LABEL_ZONE], first.metadata.labels[wk.LABEL_INSTANCE_TYPE]  # type: ignore[index]
    cloud.aws.unavailable.mark_unavailable(OfferingKey(instance_type, zone, "on-demand"), "test")
    again = cloud.create(claim("cut-short", "default", ON_DEMAND, AMD64, uid="uid-cut-short"))
    assert instance_id(again.status.provider_id) != first_id  # type: ignore[union-attr]
    assert (
        again.metadata.labels[wk.LABEL_ZONE] != zone or again.metadata.labels[wk.LABEL_INSTANCE_TYPE] != instance_type
    )  # type: ignore[index]
