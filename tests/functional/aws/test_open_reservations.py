"""Open capacity reservations as EC2 matches them, and what the launcher asks (moto over HTTP, plain boto3).

EC2 runs a matching on-demand launch in an open reservation unless its template says
``CapacityReservationPreference: none``; the launcher says none on every launch that is not reserved while the
ReservedCapacity gate is on (Karpenter's targeted launch mode), so a reservation the NodePool did not ask for keeps
its capacity. A reservation that ends leaves its instances running as on-demand ones. Each test reserves a type and
zone no other test reserves and cancels it at the end, since the session's world is shared."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from moto.backends import get_backend

from autoscaler.apis.v1 import labels as wk
from autoscaler.providers.aws.ec2instance import Instance, instance_id
from autoscaler.settings import FeatureGates
from autoscaler_dev.world import ec2_reservations
from autoscaler_dev.world.aws_world import ACCOUNT, REGION, ZONES, AWSWorld
from tests.functional.aws.helpers import claim, instance, provider
from tests.functional.aws.test_ec2_allocation import fleet, launched
from tests.functional.aws.test_launch import AMD64

A, B, C = ZONES
NONE = {"CapacityReservationSpecification": {"CapacityReservationPreference": "none"}}


@contextmanager
def reserved(world: AWSWorld, instance_type: str, zone: str, count: int, **fields: Any) -> Iterator[str]:
    rid = world.reserve(instance_type, zone, count, **fields)
    try:
        yield rid
    finally:
        world.client("ec2").cancel_capacity_reservation(CapacityReservationId=rid)


def available(world: AWSWorld, rid: str) -> int:
    (found,) = world.client("ec2").describe_capacity_reservations(CapacityReservationIds=[rid])["CapacityReservations"]
    return int(found["AvailableInstanceCount"])


def test_an_open_reservation_takes_matching_on_demand_launches_while_it_has_room(aws_world: AWSWorld) -> None:
    with reserved(aws_world, "t3.xlarge", A, 2, match_criteria="open") as rid:
        instances = launched(aws_world, fleet(aws_world, [("t3.xlarge", A)], 3))
        inside = [i for i in instances if i.get("CapacityReservationId") == rid]
        assert len(instances) == 3 and len(inside) == 2
        assert {i["CapacityReservationSpecification"]["CapacityReservationPreference"] for i in inside} == {"open"}
        assert available(aws_world, rid) == 0
        # Landed there, not targeted: the provider reads them as on-demand, as Karpenter does.
        assert {Instance.from_ec2(i).capacity_type for i in instances} == {wk.CAPACITY_TYPE_ON_DEMAND}


@pytest.mark.parametrize(
    ("capacity_type", "template", "criteria", "zone"),
    [
        ("on-demand", NONE, "open", A),  # the launch opts out
        ("spot", None, "open", A),  # spot never runs in a reservation
        ("on-demand", None, "targeted", A),  # a targeted reservation takes only launches that target it
        ("on-demand", None, "open", B),  # another zone's
    ],
)
def test_launches_that_do_not_match_stay_out_of_the_reservation(
    aws_world: AWSWorld, capacity_type: str, template: dict[str, Any] | None, criteria: str, zone: str
) -> None:
    with reserved(aws_world, "t3.2xlarge", zone, 2, match_criteria=criteria) as rid:
        instances = launched(aws_world, fleet(aws_world, [("t3.2xlarge", A)], 1, capacity_type, template))
        assert len(instances) == 1 and "CapacityReservationId" not in instances[0]
        assert available(aws_world, rid) == 2


def targeting(rid: str) -> dict[str, Any]:
    return {
        "CapacityReservationSpecification": {
            "CapacityReservationPreference": "capacity-reservations-only",
            "CapacityReservationTarget": {"CapacityReservationId": rid},
        }
    }


@pytest.mark.parametrize("ending", ["cancelled", "expired"])
def test_an_ended_reservation_leaves_its_instances_running_as_on_demand(aws_world: AWSWorld, ending: str) -> None:
    end = datetime.now(UTC) + timedelta(hours=1)
    with reserved(aws_world, "t3.xlarge", B, 1, match_criteria="targeted", end=end) as rid:
        (before,) = launched(aws_world, fleet(aws_world, [("t3.xlarge", B)], 1, template=targeting(rid)))
        assert Instance.from_ec2(before).capacity_type == wk.CAPACITY_TYPE_RESERVED
        if ending == "expired":  # the world's clock passes the end date
            backend = get_backend("ec2")[ACCOUNT][REGION]
            assert rid not in [r.id for r in ec2_reservations.expire(backend, end - timedelta(seconds=1))]
            assert rid in [r.id for r in ec2_reservations.expire(backend, end)]  # (others' past ones end too)
    after = instance(aws_world, before["InstanceId"])  # cancelled on leaving the block, if it has not expired
    assert after["State"]["Name"] == "running" and "CapacityReservationId" not in after
    assert Instance.from_ec2(after).capacity_type == wk.CAPACITY_TYPE_ON_DEMAND


@pytest.mark.parametrize("gate", [True, False])
def test_ordinary_launches_say_none_to_open_reservations_while_the_gate_is_on(aws_world: AWSWorld, gate: bool) -> None:
    nodeclass = aws_world.nodeclass("default")
    cloud = provider(aws_world, nodeclass, feature_gates=FeatureGates(reserved_capacity=gate))
    pinned = ((wk.LABEL_INSTANCE_TYPE, "In", ["m5.2xlarge"]), (wk.LABEL_ZONE, "In", [C]))
    on_demand = (wk.LABEL_CAPACITY_TYPE, "In", [wk.CAPACITY_TYPE_ON_DEMAND])
    with reserved(aws_world, "m5.2xlarge", C, 1, match_criteria="open") as rid:
        node = cloud.create(claim(f"open-{gate}", "default", on_demand, AMD64, *pinned))
        raw = instance(aws_world, instance_id(node.status.provider_id))  # type: ignore[union-attr]
        assert (node.metadata.labels or {})[wk.LABEL_CAPACITY_TYPE] == wk.CAPACITY_TYPE_ON_DEMAND
        assert wk.LABEL_CAPACITY_RESERVATION_ID not in (node.metadata.labels or {})
        if gate:
            assert raw["CapacityReservationSpecification"]["CapacityReservationPreference"] == "none"
            assert "CapacityReservationId" not in raw and available(aws_world, rid) == 1
        else:  # Karpenter's open launch mode: EC2 matches the launch to the reservation
            assert raw.get("CapacityReservationId") == rid and available(aws_world, rid) == 0


def test_a_capacity_block_past_its_end_takes_its_instances_back(aws_world: AWSWorld) -> None:
    end = datetime.now(UTC) + timedelta(hours=1)
    with reserved(aws_world, "t3.xlarge", C, 1, match_criteria="targeted", kind="capacity-block", end=end) as rid:
        (before,) = launched(aws_world, fleet(aws_world, [("t3.xlarge", C)], 1, template=targeting(rid)))
        ended = ec2_reservations.expire(get_backend("ec2")[ACCOUNT][REGION], end)
        assert rid in [r.id for r in ended]
        assert instance(aws_world, before["InstanceId"])["State"]["Name"] in ("shutting-down", "terminated")
        (described,) = aws_world.client("ec2").describe_capacity_reservations(CapacityReservationIds=[rid])[
            "CapacityReservations"
        ]
        assert described["State"] == "expired"
