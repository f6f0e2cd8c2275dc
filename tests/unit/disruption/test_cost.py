"""Disruption cost: pods that matter more cost more to evict, and nodes near expiry cost less to disrupt."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from autoscaler.controllers.state.cost import (
    POD_DELETION_COST,
    disruption_cost,
    eviction_cost,
    lifetime_remaining,
)

NOW = datetime(2026, 1, 5, 12, tzinfo=UTC)
DAY = timedelta(days=1)


def pod(priority: int | None = None, deletion_cost: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"metadata": {"name": "p", "namespace": "default"}, "spec": {}}
    if priority is not None:
        body["spec"]["priority"] = priority
    if deletion_cost is not None:
        body["metadata"]["annotations"] = {POD_DELETION_COST: deletion_cost}
    return body


class TestEvictionCost:
    def test_default_is_one(self) -> None:
        assert eviction_cost(pod()) == 1.0
        assert eviction_cost({}) == 1.0

    def test_scales(self) -> None:
        assert eviction_cost(pod(deletion_cost=str(2**27))) == 2.0
        assert eviction_cost(pod(priority=2**25)) == 2.0
        assert eviction_cost(pod(priority=-(2**24), deletion_cost=str(2**26))) == 1.0

    def test_clamped(self) -> None:
        assert eviction_cost(pod(priority=2_000_000_000)) == 10.0
        assert eviction_cost(pod(deletion_cost=str(-(2**31)))) == -10.0  # 1 - 16 before clamping
        assert eviction_cost(pod(priority=-(2**31))) == -10.0

    @pytest.mark.parametrize("text", ["abc", "", " 5", "1_000", "nan", "inf", "0x10"])
    def test_unparseable_deletion_cost_is_ignored(self, text: str) -> None:
        assert eviction_cost(pod(deletion_cost=text)) == 1.0

    def test_float_deletion_cost_is_read_like_karpenter(self) -> None:
        assert eviction_cost(pod(deletion_cost="1.5e8")) == pytest.approx(1.0 + 1.5e8 / 2**27)

    def test_high_priority_costs_more(self) -> None:
        assert eviction_cost(pod(priority=1_000_000)) > eviction_cost(pod()) > eviction_cost(pod(priority=-1_000_000))

    @given(st.integers(-(2**31), 10**9), st.integers(-(2**31), 2**31 - 1))
    def test_always_within_bounds(self, priority: int, deletion_cost: int) -> None:
        assert -10.0 <= eviction_cost(pod(priority, str(deletion_cost))) <= 10.0


class TestLifetimeRemaining:
    @pytest.mark.parametrize(
        ("age", "left"),
        [(timedelta(0), 1.0), (DAY, 0.75), (2 * DAY, 0.5), (4 * DAY, 0.0), (10 * DAY, 0.0), (-DAY, 1.0)],
    )
    def test_fraction_of_expire_after(self, age: timedelta, left: float) -> None:
        assert lifetime_remaining(NOW - age, 4 * DAY, NOW) == pytest.approx(left)

    def test_never_expiring_keeps_everything(self) -> None:
        assert lifetime_remaining(NOW - 1000 * DAY, None, NOW) == 1.0

    def test_zero_expire_after_has_nothing_left(self) -> None:
        assert lifetime_remaining(NOW, timedelta(0), NOW) == 0.0


class TestDisruptionCost:
    def test_sum_of_pods_scaled_by_lifetime(self) -> None:
        pods = [pod(), pod(priority=2**25)]
        assert disruption_cost(pods, NOW - DAY, 4 * DAY, NOW) == pytest.approx(3.0 * 0.75)
        assert disruption_cost([], NOW, None, NOW) == 0.0

    def test_node_near_expiry_is_cheaper(self) -> None:
        pods = [pod(), pod()]
        fresh = disruption_cost(pods, NOW - DAY, 30 * DAY, NOW)
        old = disruption_cost(pods, NOW - 29 * DAY, 30 * DAY, NOW)
        assert old < fresh

    def test_accepts_any_iterable(self) -> None:
        assert disruption_cost((pod() for _ in range(3)), NOW, None, NOW) == 3.0
