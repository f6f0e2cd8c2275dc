"""Capacity reservation selector terms as DescribeCapacityReservations queries, and EC2's reservations as status
entries (Karpenter's rules: active only, open and targeted, a capacity block expiring 40 minutes before its end)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from autoscaler.apis.v1.ec2nodeclass import CapacityReservationSelectorTerm
from autoscaler.providers.aws.capacityreservations import queries, status_of

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
ACTIVE = {"Name": "state", "Values": ["active"]}


def term(**fields: Any) -> CapacityReservationSelectorTerm:
    return CapacityReservationSelectorTerm.model_validate(fields)


def reservation(**fields: Any) -> dict[str, Any]:
    return {
        "CapacityReservationId": "cr-0abc",
        "AvailabilityZone": "us-west-2a",
        "InstanceType": "m5.large",
        "InstanceMatchCriteria": "targeted",
        "OwnerId": "123456789012",
        "AvailableInstanceCount": 2,
        **fields,
    }


def test_an_id_term_is_one_query_by_id_and_a_tag_term_one_by_filters() -> None:
    asked = queries(
        [
            term(id="cr-0abc"),
            term(tags={"team": "ml", "any": "*"}, ownerID="123456789012", instanceMatchCriteria="open"),
        ]
    )
    assert asked[0] == {"CapacityReservationIds": ["cr-0abc"], "Filters": [ACTIVE]}
    assert asked[1]["Filters"] == [
        ACTIVE,
        {"Name": "tag-key", "Values": ["any"]},
        {"Name": "tag:team", "Values": ["ml"]},
        {"Name": "owner-id", "Values": ["123456789012"]},
        {"Name": "instance-match-criteria", "Values": ["open"]},
    ]
    assert queries([]) == []


def test_a_reservation_becomes_its_status_entry() -> None:
    status = status_of(reservation(), NOW)
    assert status is not None
    assert status.to_dict() == {
        "availabilityZone": "us-west-2a",
        "id": "cr-0abc",
        "instanceMatchCriteria": "targeted",
        "instanceType": "m5.large",
        "interruptible": False,
        "ownerID": "123456789012",
        "reservationType": "default",
        "state": "active",
    }


def test_a_capacity_block_is_expiring_from_forty_minutes_before_its_end() -> None:
    end = NOW + timedelta(minutes=40)
    block = reservation(ReservationType="capacity-block", EndDate=end)
    expiring = status_of(block, NOW)
    active = status_of(block, NOW - timedelta(seconds=1))
    assert expiring is not None and expiring.state == "expiring" and expiring.end_time == "2026-05-01T12:40:00Z"
    assert active is not None and active.state == "active"
    default = status_of(reservation(EndDate=end), NOW)  # only capacity blocks expire early
    assert default is not None and default.state == "active"


def test_what_karpenter_would_not_use_is_left_out() -> None:
    assert status_of(reservation(InstanceMatchCriteria="someday"), NOW) is None
    assert status_of(reservation(ReservationType="future-kind"), NOW) is None
