"""What an instance costs the run, and what capacity reservations cost and hold, as the summary counts them.

A reservation is paid for by the hour whether its instances run or not, so an instance launched into one costs the
cluster nothing more than the reservation already does: the summary prices it as the provisioner does (Karpenter's
price model, ``providers.aws.reserved``: the on-demand price / 10,000,000, next to nothing), so ``cost_per_hour``
is what the autoscaler's choices add, and a run that uses its reservation is cheaper than one that leaves it idle.
What the reservations cost themselves, used or not, is reported apart (``reservations_cost_per_hour``: each active
reservation's instances at the on-demand rate; a capacity block's own rate is not modelled). The lower bound counts
the reservations' instances as free capacity of a bounded amount (``free_capacity``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, Protocol

from moto.backends import get_backend

from autoscaler.providers.aws.capacityreservations import CAPACITY_BLOCK_LEAD
from autoscaler.providers.aws.reserved import reserved_price
from autoscaler_dev.world import ec2_reservations
from autoscaler_dev.world.aws_world import ACCOUNT, REGION
from autoscaler_dev.world.ec2_reservations import Reservation


class Prices(Protocol):
    """The autoscaler's prices (``providers.aws.pricing.Pricing``)."""

    def on_demand(self, instance_type: str) -> float | None: ...

    def spot(self, instance_type: str, zone: str) -> float | None: ...


def instance_price(pricing: Prices, instance: Any) -> float:
    """``instance`` (moto's) per hour at the price the provisioner saw: spot at the zone's spot price, launched into
    a reservation (the world records which) at the reserved price, else on-demand."""
    zone = instance.placement if isinstance(instance.placement, str) else getattr(instance.placement, "zone", "")
    if instance.lifecycle == "spot":
        return pricing.spot(instance.instance_type, str(zone)) or 0.0
    on_demand = pricing.on_demand(instance.instance_type)
    if getattr(instance, "capacity_reservation_id", None):
        return reserved_price(on_demand)
    return on_demand or 0.0


def active_reservations() -> list[Reservation]:
    """The world account's reservations that are active now (not expired or cancelled)."""
    backend = get_backend("ec2")[ACCOUNT][REGION]
    return [r for r in ec2_reservations.store(backend).values() if r.state == "active"]


def reservations_cost(pricing: Prices, reservations: Iterable[Reservation]) -> float:
    """What the reservations cost per hour whether used or not: every instance of each at the on-demand rate."""
    return sum(r.total * (pricing.on_demand(r.instance_type) or 0.0) for r in reservations)


def free_capacity(
    offered: Mapping[str, tuple[float, float]], reservations: Iterable[Reservation], now: datetime
) -> tuple[float, float]:
    """The CPU (millicores) and memory (bytes) the reservations offered to a NodePool hold at no extra cost:
    ``offered`` is reservation id -> its instance type's allocatable CPU and memory; every instance counts, used or
    not (used ones hold pods too), except a capacity block's once it is expiring (``CAPACITY_BLOCK_LEAD`` before its
    end): its nodes are drained, so it holds no pod."""
    cpu = memory = 0.0
    for reservation in reservations:
        expiring = reservation.end is not None and now >= reservation.end - CAPACITY_BLOCK_LEAD
        if reservation.id in offered and not (reservation.kind == "capacity-block" and expiring):
            each_cpu, each_memory = offered[reservation.id]
            cpu += reservation.total * each_cpu
            memory += reservation.total * each_memory
    return cpu, memory
