"""Reserved offerings: one per capacity reservation in a class's ``status.capacityReservations`` (Karpenter's
ReservedCapacityResolver), and the labels a reserved offering, and a node launched from one, carries.

A reservation is paid for whether used or not, so its offering is priced at the on-demand price divided by a large
constant: next to free, so the scheduler and the launcher prefer it, yet still ordered by size for consolidation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.ec2nodeclass_status import CapacityReservationStatus
from autoscaler.cloudprovider.types import InstanceType, Offering, Reservation

RESERVED_PRICE_DIVISOR = 10_000_000.0  # Karpenter's: "free", with the relative order of on-demand prices kept


def reserved_price(on_demand_price: float | None) -> float:
    """Without an on-demand price the reservation is still usable, at zero (Karpenter's choice too)."""
    return on_demand_price / RESERVED_PRICE_DIVISOR if on_demand_price is not None else 0.0


def reservation_labels(reservation: Reservation) -> dict[str, str]:
    return {
        wk.LABEL_CAPACITY_RESERVATION_ID: reservation.id,
        wk.LABEL_CAPACITY_RESERVATION_TYPE: reservation.type,
        wk.LABEL_CAPACITY_RESERVATION_INTERRUPTIBLE: "true" if reservation.interruptible else "false",
    }


def reserved_offerings(
    instance_type: str,
    reservations: Sequence[CapacityReservationStatus],
    on_demand_price: float | None,
    zone_ids: Mapping[str, str | None],
    available: Callable[[str], int],
    *,
    shifted: frozenset[str] = frozenset(),
) -> list[Offering]:
    """The reserved offerings of ``instance_type``. One is available while the reservation has free instances
    (``available``: the availability cache), is in one of the class's zones (``zone_ids``: zone -> id), is not
    expiring, and its zone is not shifted away by ARC (``shifted``: zone ids)."""
    result = []
    for status in reservations:
        if status.instance_type != instance_type:
            continue
        capacity = available(status.id)
        zone_id = zone_ids.get(status.availability_zone)
        usable = capacity > 0 and zone_id is not None and status.state != "expiring" and zone_id not in shifted
        reservation = Reservation(status.id, status.reservation_type, bool(status.interruptible), capacity)
        result.append(
            Offering(
                status.availability_zone,
                wk.CAPACITY_TYPE_RESERVED,
                reserved_price(on_demand_price),
                usable,
                zone_id,
                reservation=reservation,
            )
        )
    return result


def less_taken(instance_types: Sequence[InstanceType], taken: Mapping[str, int]) -> list[InstanceType]:
    """``instance_types`` with the reservations that earlier launches of the same pass fill (``taken``: planned
    launches per reservation) unavailable, so that those launches plan on-demand or spot instead of failing."""
    if not taken:
        return list(instance_types)

    def spent(o: Offering) -> Offering:
        full = o.reservation is not None and o.available and taken.get(o.reservation.id, 0) >= o.reservation.capacity
        return replace(o, available=False) if full else o

    return [replace(it, offerings=tuple(spent(o) for o in it.offerings)) for it in instance_types]
