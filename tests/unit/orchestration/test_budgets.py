"""NodePool disruption budgets: schedule windows, node counts, and the verdict for one reason."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from autoscaler.apis.v1.nodepool import Budget, NodePool
from autoscaler.controllers.orchestration.budgets import (
    DRIFTED,
    EMPTY,
    UNDERUTILIZED,
    allowed_disruptions,
    budget_active,
    budget_nodes,
)

# Monday 2026-01-05.
MONDAY_9AM = datetime(2026, 1, 5, 9, tzinfo=UTC)
BUSINESS_HOURS: dict[str, Any] = {"nodes": "0", "reasons": ["Drifted"], "schedule": "0 9 * * mon-fri", "duration": "8h"}


def nodepool(*budgets: dict[str, Any]) -> NodePool:
    disruption: dict[str, Any] = {"consolidateAfter": "5m"}
    if budgets:
        disruption["budgets"] = list(budgets)
    return NodePool.model_validate(
        {
            "metadata": {"name": "default"},
            "spec": {
                "template": {
                    "spec": {
                        "requirements": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}],
                        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                    }
                },
                "disruption": disruption,
            },
        }
    )


def budget(**fields: Any) -> Budget:
    return Budget.model_validate(fields)


class TestActive:
    def test_without_schedule_always_active(self) -> None:
        assert budget_active(budget(nodes="1"), MONDAY_9AM)

    @pytest.mark.parametrize(
        ("moment", "active"),
        [
            (MONDAY_9AM - timedelta(seconds=1), False),  # before the first firing
            (MONDAY_9AM, True),  # a firing exactly now opens the window
            (MONDAY_9AM + timedelta(hours=4), True),
            (MONDAY_9AM + timedelta(hours=8) - timedelta(microseconds=1), True),
            (MONDAY_9AM + timedelta(hours=8), False),  # the window is half-open
            (MONDAY_9AM + timedelta(days=5, hours=1), False),  # Saturday
        ],
    )
    def test_window_edges(self, moment: datetime, active: bool) -> None:
        assert budget_active(budget(**BUSINESS_HOURS), moment) is active

    def test_minutes_and_hours_duration(self) -> None:
        b = budget(nodes="0", schedule="30 * * * *", duration="1h30m")
        # Fired at 08:30 and 09:30; at 09:59 both windows cover now.
        assert budget_active(b, datetime(2026, 1, 5, 9, 59, tzinfo=UTC))
        assert not budget_active(budget(nodes="0", schedule="30 * * * *", duration="10m"), MONDAY_9AM)

    def test_descriptor(self) -> None:
        daily = budget(nodes="0", schedule="@daily", duration="1h")
        assert budget_active(daily, datetime(2026, 1, 5, 0, 30, tzinfo=UTC))
        assert not budget_active(daily, datetime(2026, 1, 5, 1, 0, tzinfo=UTC))

    def test_times_are_read_in_utc(self) -> None:
        b = budget(**BUSINESS_HOURS)
        assert budget_active(b, MONDAY_9AM.replace(tzinfo=None))  # naive means UTC
        same_instant_at_utc_plus_two = MONDAY_9AM.astimezone(timezone(timedelta(hours=2)))
        assert budget_active(b, same_instant_at_utc_plus_two)
        assert not budget_active(b, datetime(2026, 1, 5, 9, tzinfo=timezone(timedelta(hours=2))))  # 07:00 UTC


class TestNodes:
    @pytest.mark.parametrize(
        ("nodes", "total", "count"),
        [("5", 3, 5), ("0", 10, 0), ("10%", 15, 2), ("10%", 10, 1), ("5%", 10, 1), ("0%", 10, 0), ("100%", 0, 0)],
    )
    def test_counts_round_percentages_up(self, nodes: str, total: int, count: int) -> None:
        assert budget_nodes(budget(nodes=nodes), total) == count

    @given(st.integers(0, 100), st.integers(0, 10_000))
    def test_percentage_is_the_smallest_count_covering_it(self, percent: int, total: int) -> None:
        count = budget_nodes(budget(nodes=f"{percent}%"), total)
        assert count * 100 >= percent * total
        assert count == 0 or (count - 1) * 100 < percent * total


class TestAllowed:
    def test_default_budget_is_ten_percent(self) -> None:
        verdict = allowed_disruptions(nodepool(), DRIFTED, 25, 0, MONDAY_9AM)
        assert (verdict.allowed, verdict.limit, verdict.blocking) == (3, 3, None)

    def test_smallest_active_budget_wins(self) -> None:
        pool = nodepool({"nodes": "50%"}, {"nodes": "3"}, {"nodes": "20%"})
        assert allowed_disruptions(pool, EMPTY, 10, 0, MONDAY_9AM).limit == 2

    def test_disrupting_nodes_use_up_the_budget(self) -> None:
        pool = nodepool({"nodes": "10%"})
        assert allowed_disruptions(pool, EMPTY, 15, 1, MONDAY_9AM).allowed == 1
        verdict = allowed_disruptions(pool, EMPTY, 15, 3, MONDAY_9AM)
        assert verdict.allowed == 0
        assert verdict.disrupting == 3
        assert verdict.blocking == "budget of 10% (2 nodes) is used up by 3 nodes already disrupting"

    def test_reasons_filter(self) -> None:
        pool = nodepool({"nodes": "20%"}, BUSINESS_HOURS, {"nodes": "5", "reasons": ["Empty"]})
        drifted = allowed_disruptions(pool, DRIFTED, 20, 0, MONDAY_9AM)
        assert drifted.allowed == 0
        assert drifted.blocking == "budget of 0 nodes for Drifted active in window '0 9 * * mon-fri' for 8h"
        assert allowed_disruptions(pool, UNDERUTILIZED, 20, 0, MONDAY_9AM).allowed == 4
        assert allowed_disruptions(pool, EMPTY, 40, 0, MONDAY_9AM).allowed == 5

    def test_inactive_window_lifts_its_budget(self) -> None:
        pool = nodepool({"nodes": "20%"}, BUSINESS_HOURS)
        evening = MONDAY_9AM + timedelta(hours=9)
        assert allowed_disruptions(pool, DRIFTED, 20, 0, evening).allowed == 4

    def test_no_applicable_budget_is_unlimited(self) -> None:
        pool = nodepool(BUSINESS_HOURS)
        verdict = allowed_disruptions(pool, EMPTY, 7, 2, MONDAY_9AM)
        assert (verdict.allowed, verdict.limit, verdict.blocking) == (7, None, None)

    def test_absolute_budget_above_pool_size(self) -> None:
        verdict = allowed_disruptions(nodepool({"nodes": "10"}), EMPTY, 3, 1, MONDAY_9AM)
        assert (verdict.allowed, verdict.limit) == (9, 10)

    def test_one_node_left_in_the_sentence(self) -> None:
        pool = nodepool({"nodes": "1", "reasons": ["Empty", "Drifted"]})
        verdict = allowed_disruptions(pool, EMPTY, 4, 1, MONDAY_9AM)
        assert verdict.blocking == "budget of 1 node for Empty, Drifted is used up by 1 node already disrupting"
