"""Capacity reservations against the moto world (which serves them as EC2 does): an EC2NodeClass's terms resolve by
id, tags, owner and match criteria to active reservations only, into status.capacityReservations through the
nodeclass controller; the nodeclass role as synthesized may describe them, and without the permission the condition
says EC2 refused."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError

from autoscaler.apis.v1.conditions import get_condition
from autoscaler.apis.v1.ec2nodeclass import CapacityReservationSelectorTerm
from autoscaler.controllers.nodeclass import CAPACITY_RESERVATIONS_READY, NodeClassController
from autoscaler_dev.world.aws_world import ACCOUNT, AWSWorld
from tests.functional.aws.helpers import provider
from tests.support.iam_gates import gated, synthesized, without_action

ZONE = "us-west-2a"


def _term(**fields: Any) -> CapacityReservationSelectorTerm:
    return CapacityReservationSelectorTerm.model_validate(fields)


@pytest.fixture
def team() -> str:
    """A tag value of this test's own: the session's world keeps other tests' reservations."""
    return f"team-{uuid.uuid4().hex[:8]}"


def test_terms_select_active_reservations_by_id_tags_owner_and_criteria(aws_world: AWSWorld, team: str) -> None:
    ec2 = aws_world.client("ec2")
    created = ec2.create_capacity_reservation(
        InstanceType="m5.large",
        InstancePlatform="Linux/UNIX",
        AvailabilityZone=ZONE,
        InstanceCount=3,
        InstanceMatchCriteria="targeted",
        TagSpecifications=[{"ResourceType": "capacity-reservation", "Tags": [{"Key": "team", "Value": team}]}],
    )["CapacityReservation"]
    open_one = aws_world.reserve("m5.xlarge", ZONE, 1, match_criteria="open", tags={"team": team})
    cancelled = aws_world.reserve("m5.large", ZONE, 1, tags={"team": team})
    ec2.cancel_capacity_reservation(CapacityReservationId=cancelled)
    reservations = provider(aws_world).aws.reservations

    by_tags = reservations.statuses([_term(tags={"team": team})])
    assert [s.id for s in by_tags] == sorted([created["CapacityReservationId"], open_one])
    targeted = reservations.statuses([_term(tags={"team": team}, instanceMatchCriteria="targeted")])
    assert [(s.id, s.instance_type, s.instance_match_criteria) for s in targeted] == [
        (created["CapacityReservationId"], "m5.large", "targeted")
    ]
    assert reservations.statuses([_term(tags={"team": team}, ownerID="210987654321")]) == []
    assert reservations.statuses([_term(id=cancelled)]) == []  # only active reservations are used
    assert reservations.statuses([_term(id="cr-0000000000000dead")]) == []  # gone: matches nothing
    assert reservations.available(created["CapacityReservationId"]) == 3


def test_a_capacity_block_is_expiring_near_its_end_and_gone_after_it(aws_world: AWSWorld, team: str) -> None:
    now = datetime.now(UTC)
    soon = aws_world.reserve(
        "m5.large", ZONE, 2, kind="capacity-block", end=now + timedelta(minutes=30), tags={"block": team}
    )
    aws_world.reserve("m5.large", ZONE, 2, kind="capacity-block", end=now - timedelta(minutes=1), tags={"block": team})
    later = aws_world.reserve(
        "m5.large", ZONE, 2, kind="capacity-block", end=now + timedelta(hours=5), tags={"block": team}
    )
    found = {s.id: s for s in provider(aws_world).aws.reservations.statuses([_term(tags={"block": team})])}
    assert set(found) == {soon, later}
    assert found[soon].state == "expiring" and found[later].state == "active"
    assert found[soon].reservation_type == "capacity-block"


def test_the_nodeclass_controller_fills_the_status(aws_world: AWSWorld, team: str) -> None:
    reserved = aws_world.reserve("m5.large", ZONE, 2, match_criteria="targeted", tags={"team": team})
    nodeclass = aws_world.nodeclass(
        "reserved", ready=False, capacityReservationSelectorTerms=[{"tags": {"team": team}}]
    )
    status, errors = NodeClassController(None, provider(aws_world).aws.resolver).resolve_status(nodeclass)  # type: ignore[arg-type]
    assert not errors
    assert [(r.id, r.owner_id, r.availability_zone) for r in status.capacity_reservations or []] == [
        (reserved, ACCOUNT, ZONE)
    ]
    condition = get_condition(status.conditions, CAPACITY_RESERVATIONS_READY)
    assert condition is not None and condition.status == "True"


def test_the_nodeclass_role_may_describe_reservations_and_is_refused_without_the_permission(
    aws_world: AWSWorld, team: str
) -> None:
    aws_world.reserve("m5.large", ZONE, 1, tags={"team": team})
    stack = synthesized()
    nodeclass = aws_world.nodeclass("gated", ready=False, capacityReservationSelectorTerms=[{"tags": {"team": team}}])

    def condition(stack_template: dict[str, Any]) -> tuple[str, str]:
        clients, _ = gated(aws_world, stack_template, "nodeclass")
        reservations = provider(aws_world, clients=clients).aws.resolver
        status, _ = NodeClassController(None, reservations).resolve_status(nodeclass)  # type: ignore[arg-type]
        found = get_condition(status.conditions, CAPACITY_RESERVATIONS_READY)
        assert found is not None
        return found.status, found.message or ""

    assert condition(stack)[0] == "True"
    status, message = condition(without_action(stack, "nodeclass", "ec2:DescribeCapacityReservations"))
    assert status == "False"
    assert "UnauthorizedOperation" in message and "ec2:DescribeCapacityReservations" in message


def test_an_unknown_filter_is_refused_as_ec2_refuses_it(aws_world: AWSWorld) -> None:
    with pytest.raises(ClientError) as refused:
        aws_world.client("ec2").describe_capacity_reservations(Filters=[{"Name": "colour", "Values": ["red"]}])
    assert refused.value.response["Error"]["Code"] == "InvalidParameterValue"
