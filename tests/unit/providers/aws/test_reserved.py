"""Reserved offerings (Karpenter's ReservedCapacityResolver), their labels and the launcher's preference for them."""

from __future__ import annotations

from dataclasses import replace

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.ec2nodeclass_status import CapacityReservationStatus
from autoscaler.cloudprovider.types import InstanceType
from autoscaler.providers.aws import drift, selection
from autoscaler.providers.aws.reserved import RESERVED_PRICE_DIVISOR, reserved_offerings
from tests.unit.providers.aws.test_selection import BOTH, instance_type, req

ZONES = {"a": "id-a", "b": "id-b"}


def status(rid: str, zone: str = "a", itype: str = "m5.large", **extra: object) -> CapacityReservationStatus:
    return CapacityReservationStatus.model_validate(
        {
            "id": rid,
            "availabilityZone": zone,
            "instanceType": itype,
            "instanceMatchCriteria": "targeted",
            "ownerID": "123456789012",
            **extra,
        }
    )


def test_a_reservation_is_an_offering_of_its_type_and_zone_priced_next_to_free() -> None:
    reservations = [status("cr-1"), status("cr-2", itype="m5.xlarge")]
    (offering,) = reserved_offerings("m5.large", reservations, 0.096, ZONES, lambda _: 3)
    assert (offering.zone, offering.zone_id, offering.capacity_type) == ("a", "id-a", wk.CAPACITY_TYPE_RESERVED)
    assert offering.price == 0.096 / RESERVED_PRICE_DIVISOR
    assert offering.available and offering.reservation is not None
    assert (offering.reservation.id, offering.reservation.type, offering.reservation.capacity) == ("cr-1", "default", 3)
    # Without an on-demand price the reservation is still offered, at zero.
    assert reserved_offerings("m5.large", reservations, None, ZONES, lambda _: 3)[0].price == 0.0


def test_a_reserved_offering_is_unavailable_when_full_expiring_outside_the_zones_or_shifted_away() -> None:
    def available(reservations: list[CapacityReservationStatus], free: int = 1, **kw: object) -> bool:
        return reserved_offerings("m5.large", reservations, 0.1, ZONES, lambda _: free, **kw)[0].available  # type: ignore[arg-type]

    assert available([status("cr-1")])
    assert not available([status("cr-1")], free=0)
    assert not available([status("cr-1", state="expiring", reservationType="capacity-block")])
    assert not available([status("cr-1", zone="c")])
    assert not available([status("cr-1")], shifted=frozenset({"id-a"}))


def test_reserved_offerings_carry_karpenters_reservation_labels() -> None:
    reservations = [status("cr-9", reservationType="capacity-block", interruptible=True)]
    (offering,) = reserved_offerings("m5.large", reservations, 0.1, ZONES, lambda _: 1)
    assert selection.offering_labels(offering) == {
        wk.LABEL_ZONE: "a",
        wk.LABEL_ZONE_ID: "id-a",
        wk.LABEL_CAPACITY_TYPE: "reserved",
        wk.LABEL_CAPACITY_RESERVATION_ID: "cr-9",
        wk.LABEL_CAPACITY_RESERVATION_TYPE: "capacity-block",
        wk.LABEL_CAPACITY_RESERVATION_INTERRUPTIBLE: "true",
    }


def with_reservation(free: int) -> InstanceType:
    plain = instance_type("m5.large", BOTH)
    reserved = reserved_offerings("m5.large", [status("cr-1")], 0.1, ZONES, lambda _: free)
    return replace(plain, offerings=(*plain.offerings, *reserved))


def test_the_launch_prefers_reserved_then_spot_then_on_demand_as_karpenter() -> None:
    assert selection.capacity_type([with_reservation(2)], []) == wk.CAPACITY_TYPE_RESERVED
    assert selection.capacity_type([with_reservation(0)], []) == wk.CAPACITY_TYPE_SPOT  # full: falls back
    no_reserved = [req(wk.LABEL_CAPACITY_TYPE, "In", "spot", "on-demand")]
    assert selection.capacity_type([with_reservation(2)], no_reserved) == wk.CAPACITY_TYPE_SPOT
    only_other = [req(wk.LABEL_CAPACITY_RESERVATION_ID, "In", "cr-other")]
    assert selection.capacity_type([with_reservation(2)], only_other) == wk.CAPACITY_TYPE_ON_DEMAND


def test_a_reserved_type_is_the_cheapest_candidate() -> None:
    dear_reserved = replace(with_reservation(1), name="m5.xlarge")
    cheap = instance_type("c5.large", {("a", "on-demand"): 0.05})
    ordered = selection.preferred([cheap, dear_reserved], [])
    assert [it.name for it in ordered] == ["m5.xlarge"]  # only types with a reserved offering launch reserved


def test_a_reserved_instance_drifts_when_the_class_no_longer_selects_its_reservation() -> None:
    selected = [status("cr-1"), status("cr-2")]
    assert drift.capacity_reservation_drift("cr-1", selected) is None
    assert drift.capacity_reservation_drift("", selected) is None  # on-demand and spot instances never drift so
    found = drift.capacity_reservation_drift("cr-3", selected)
    assert found is not None and found.reason == "CapacityReservationDrift" and "cr-3" in found.message
    assert drift.capacity_reservation_drift("cr-1", []) is not None  # the class's terms select none any more
