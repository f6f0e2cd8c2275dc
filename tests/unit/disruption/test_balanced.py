"""consolidationPolicy: Balanced: a move's share of its NodePool's savings against its share of disruption."""

from __future__ import annotations

import math
from typing import Any

import pytest

from autoscaler.commands.plan_disruption import DisruptionPlan
from autoscaler.controllers.disruption.balanced import PoolTotals, Score, reschedule_cost, score
from tests.unit.disruption.world import World, node_and_claim, pod, pool


def test_the_score_is_the_savings_share_over_the_disruption_share_against_one_over_k() -> None:
    found = score(0.1, 2.0, PoolTotals(cost=1.0, disruption=10.0))
    assert found is not None
    assert (found.savings_fraction, found.disruption_fraction) == pytest.approx((0.1, 0.2))
    assert found.value == pytest.approx(0.5) and found.threshold == 0.5 and found.approved
    assert not Score(0.099, 0.2).approved
    assert Score(0.0, 0.0).value == 0.0 and not Score(-0.1, 0.1).approved  # nothing saved never passes
    assert Score(0.1, 0.0).value == math.inf
    assert score(0.1, 1.0, PoolTotals(0.0, 1.0)) is None  # nothing to weigh against


def test_a_nodes_disruption_cost_is_one_plus_its_pods_eviction_costs_never_below_zero() -> None:
    cheap = pod("p", "n", annotations={"controller.kubernetes.io/pod-deletion-cost": "-2147483648"})
    assert reschedule_cost([]) == 1.0
    assert reschedule_cost([pod("a", "n"), pod("b", "n")]) == pytest.approx(3.0)
    assert reschedule_cost([cheap]) == pytest.approx(1.0)  # -15 clamps to -10 by EvictionCost, then to 0


def nodes(policy: str, *, dear_pods: bool = False) -> World:
    """``old``, an m5.2xlarge ($0.384/h) with a 3-CPU pod, and ``full``, an m5.xlarge ($0.192/h) with a 3.5-CPU pod
    that fits beside old's. With ``dear_pods``, evicting either pod costs about 4 rather than 1 (priority), and a
    third node, ``kept`` (m5.2xlarge, do-not-disrupt), adds to the NodePool's cost."""
    nodepool = pool(disruption={"consolidationPolicy": policy, "budgets": [{"nodes": "100%"}]})
    movers = [pod("a", "node-old", cpu="3"), pod("b", "node-full", cpu="3500m")]
    objects: list[Any] = [nodepool, *node_and_claim("old", nodepool, "m5.2xlarge")]
    objects += [*node_and_claim("full", nodepool, "m5.xlarge"), *movers]
    if dear_pods:
        for mover in movers:
            mover["spec"]["priority"] = 100_000_000
        kept = node_and_claim("kept", nodepool, "m5.2xlarge", annotations={"karpenter.sh/do-not-disrupt": "true"})
        objects += [*kept, pod("c", "node-kept", cpu="7900m")]
    return World.of(*objects)


def test_balanced_takes_a_move_worth_its_disruption_and_shows_its_score() -> None:
    found = nodes("Balanced").controller().assess()
    command = found.decisions.command
    assert command is not None and command.savings == pytest.approx(0.192)
    # saves 0.192 of 0.576 $/h (33%) for 2 of the pool's 4 disruption units (50%): 0.67 >= 0.5
    assert command.scores["default"].value == pytest.approx((0.192 / 0.576) / 0.5)
    assert "score 0.67 >= threshold 0.50 (k: 2, savings 33.3%, disruption 50.0%)" in command.describe()
    (taken,) = command.candidates
    rows: dict[str, Any] = {r["node"]: r for r in DisruptionPlan(found).nodes()}
    assert rows[taken.node_name]["score"] == pytest.approx(0.6667, abs=1e-4)
    assert rows[taken.node_name]["threshold"] == 0.5


def test_balanced_refuses_moves_whose_disruption_outweighs_their_savings_where_underutilized_takes_one() -> None:
    assert nodes("WhenEmptyOrUnderutilized", dear_pods=True).controller().assess().decisions.command is not None
    decisions = nodes("Balanced", dear_pods=True).controller().assess().decisions
    assert decisions.command is None
    # each move saves 0.192 of 0.96 $/h (20%) for 4.98 of 11.96 disruption units (42%): 0.48 < 0.5
    assert decisions.blocked["node-old"].startswith("NodePool default (Balanced): score 0.48 < threshold 0.50")
    assert decisions.blocked["node-full"].startswith("Balanced: even deleting it, score 0.48 < threshold 0.50")


def test_other_policies_are_not_scored() -> None:
    command = nodes("WhenEmptyOrUnderutilized").controller().assess().decisions.command
    assert command is not None and command.scores == {}


def test_a_balanced_node_that_even_a_deletion_could_not_justify_is_not_simulated() -> None:
    nodepool = pool(disruption={"consolidationPolicy": "Balanced"})
    old, old_node = node_and_claim("old", nodepool, "m5.xlarge")
    big, big_node = node_and_claim("big", nodepool, "m5.2xlarge")
    pods = [pod(f"p{i}", "node-old", cpu="100m") for i in range(8)] + [pod("q", "node-big", cpu="7900m")]
    decisions = World.of(nodepool, old, old_node, big, big_node, *pods).controller().assess().decisions
    # deleting old saves 0.192 of 0.576 $/h (33%) for 9 of 11 disruption units (82%): 0.41 < 0.5
    assert decisions.blocked["node-old"].startswith("Balanced: even deleting it, score 0.41 < threshold 0.50")


def test_the_pass_reports_balanced_moves_approved_and_rejected_with_their_scores() -> None:
    result = nodes("Balanced").controller().run()
    assert result is not None and result.outcome.started
    points = [(p.name, dict(p.dimensions), p.value) for p in result.metric_points()]
    approved = {"decision": "approved", "nodepool": "default", "policy": "Balanced"}
    assert ("karpenter_consolidation_moves_total", approved, 1) in points
    assert ("karpenter_consolidation_score", approved, pytest.approx(0.6667, abs=1e-4)) in points
    refused = nodes("Balanced", dear_pods=True).controller().run()
    assert refused is not None and not refused.outcome.started
    moves = [p for p in refused.metric_points() if p.name == "karpenter_consolidation_moves_total"]
    assert moves and all(dict(p.dimensions)["decision"] == "rejected" for p in moves)


@pytest.mark.parametrize("policy", ["WhenEmptyOrUnderutilized", "Balanced"])
def test_candidates_go_most_saved_per_unit_of_disruption_first(policy: str) -> None:
    """Karpenter v1.14's order for every policy: ``dear`` (m5.xlarge, 3 pods: $0.192/h for 4 units of disruption) goes
    before ``cheap`` (m5.large, 2 pods: $0.096/h for 3), although ``cheap`` costs less to disrupt. Both fit on
    ``big``; the budget lets one go per pass."""
    nodepool = pool(disruption={"consolidationPolicy": policy, "budgets": [{"nodes": "1"}]})
    objects: list[Any] = [nodepool, *node_and_claim("cheap", nodepool, "m5.large")]
    objects += [*node_and_claim("dear", nodepool, "m5.xlarge")]
    objects += node_and_claim("big", nodepool, "m5.2xlarge", annotations={"karpenter.sh/do-not-disrupt": "true"})
    objects += [pod(f"c{i}", "node-cheap") for i in range(2)] + [pod(f"d{i}", "node-dear") for i in range(3)]
    objects.append(pod("b", "node-big"))
    command = World.of(*objects).controller().assess().decisions.command
    assert command is not None
    assert [c.node_name for c in command.candidates] == ["node-dear"]
