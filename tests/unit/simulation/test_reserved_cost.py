"""How the summary prices reserved capacity: an instance launched into a reservation adds (next to) nothing, the
reservations' own cost is counted apart, and their instances are free capacity of a bounded amount for the bound."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import pytest

from autoscaler_dev.world import costbound
from autoscaler_dev.world.ec2_reservations import Reservation
from autoscaler_dev.world.reserved_cost import free_capacity, instance_price, reservations_cost

ON_DEMAND = {"m5.large": 0.096, "m5.xlarge": 0.192}
GIB = 2**30
NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)


class Prices:
    def on_demand(self, instance_type: str) -> float | None:
        return ON_DEMAND.get(instance_type)

    def spot(self, instance_type: str, zone: str) -> float | None:
        return 0.03 if zone == "us-west-2a" else None


def _instance(instance_type: str = "m5.large", lifecycle: str | None = None, **fields: str) -> SimpleNamespace:
    return SimpleNamespace(instance_type=instance_type, lifecycle=lifecycle, placement="us-west-2a", **fields)


def _reservation(rid: str, total: int, instance_type: str = "m5.large", **fields: Any) -> Reservation:
    return Reservation(
        id=rid, instance_type=instance_type, zone="us-west-2a", total=total, owner="123456789012", **fields
    )


def test_an_instance_in_a_reservation_is_priced_as_karpenter_prices_its_offering() -> None:
    assert instance_price(Prices(), _instance()) == 0.096
    assert instance_price(Prices(), _instance(lifecycle="spot")) == 0.03
    reserved = instance_price(Prices(), _instance(capacity_reservation_id="cr-1"))
    assert reserved == pytest.approx(0.096 / 10_000_000)


def test_the_reservations_cost_is_every_instance_of_each_used_or_not() -> None:
    found = [_reservation("cr-1", 3), _reservation("cr-2", 1, "m5.xlarge")]
    assert reservations_cost(Prices(), found) == pytest.approx(3 * 0.096 + 0.192)


def test_the_reservations_offered_are_free_capacity_of_their_size_for_the_lower_bound() -> None:
    offered = {"cr-1": (2000.0, 8.0 * GIB)}  # cr-2 is offered to no NodePool: it holds none of the pods
    cpu, memory = free_capacity(offered, [_reservation("cr-1", 3), _reservation("cr-2", 5)], NOW)
    assert (cpu, memory) == (6000.0, 24.0 * GIB)
    paid = [costbound.Option(2000, 8 * GIB, 0.096)]
    # 7 cpu of pods: 6 of them in the reservation, the seventh at half an m5.large's price at least
    assert costbound.lower_bound(7000 - cpu, max(0.0, 14 * GIB - memory), paid) == pytest.approx(0.048)


def test_a_capacity_block_holds_no_pod_once_it_is_expiring_yet_is_paid_to_its_end() -> None:
    offered = {"cr-b": (2000.0, 8.0 * GIB)}
    block = _reservation("cr-b", 3, kind="capacity-block", end=NOW + timedelta(minutes=50))
    assert free_capacity(offered, [block], NOW) == (6000.0, 24.0 * GIB)
    assert free_capacity(offered, [block], NOW + timedelta(minutes=10)) == (0.0, 0.0)  # 40 min before its end
    assert reservations_cost(Prices(), [block]) == pytest.approx(3 * 0.096)
