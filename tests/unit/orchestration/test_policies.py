"""What each reason's policy changes in the shared protocol: marks at start or a check before deletion, and what
giving up leaves behind."""

from __future__ import annotations

from autoscaler.apis.v1 import labels as wk
from autoscaler.controllers.orchestration import DISRUPTION_POLICIES, REBALANCE_POLICY, Command, Target
from autoscaler.controllers.orchestration.policy import POLICIES, BudgetCheck, GiveUp
from autoscaler.controllers.orchestration.record import CommandState
from tests.unit.orchestration.world import DISRUPTED, World


def _conditions(world: World, name: str) -> set[str]:
    status = world.claim(name).status
    return {c.type for c in (status.conditions or []) if c.status == "True"} if status else set()


def test_every_reason_a_command_can_have_has_a_policy() -> None:
    assert set(POLICIES) == {"Drifted", "Empty", "Underutilized", "RebalanceRecommendation"}
    assert all(p.budget is BudgetCheck.AT_DECISION and p.give_up is GiveUp.RELEASE for p in DISRUPTION_POLICIES)
    assert (REBALANCE_POLICY.budget, REBALANCE_POLICY.give_up) == (BudgetCheck.BEFORE_DELETION, GiveUp.KEEP_FAILED)


def test_disruption_marks_its_candidates_when_it_starts_and_unmarks_them_when_it_gives_up() -> None:
    for policy in DISRUPTION_POLICIES:
        world = World.of(policy)
        (replacement,) = world.start().created
        assert _conditions(world, "old-0") >= {"DisruptionReason"} and DISRUPTED in world.taints("old-0")
        world.cluster.remove("NodeClaim", replacement.name)
        assert "old-0" in world.advance().abandoned
        assert "DisruptionReason" not in _conditions(world, "old-0") and DISRUPTED not in world.taints("old-0")
        assert world.record("old-0") is None  # a later pass may decide about it afresh
        assert world.cluster.events_for("NodeClaim", "old-0")[-1] == "DisruptionBlocked"


def test_rebalance_marks_nothing_until_its_replacements_are_up_then_cordons() -> None:
    world = World.of(REBALANCE_POLICY)
    (replacement,) = world.start().created
    node = world.node("old-0") or {}
    assert "DisruptionReason" not in _conditions(world, "old-0") and not node["spec"].get("unschedulable")
    assert DISRUPTED not in world.taints("old-0")  # new pods may still land on it meanwhile
    world.initialize(replacement.name)
    assert world.advance().deleted == {"old-0": "RebalanceRecommendation"}
    node = world.node("old-0") or {}
    assert node["spec"]["unschedulable"] is True and DISRUPTED in world.taints("old-0")


def test_rebalance_keeps_a_failed_record_so_that_nothing_starts_it_again() -> None:
    world = World.of(REBALANCE_POLICY)
    (replacement,) = world.start().created
    world.cluster.remove("NodeClaim", replacement.name)
    assert "old-0" in world.advance().abandoned
    record = world.record("old-0")
    assert record is not None and record.state is CommandState.FAILED and record.reason == "RebalanceRecommendation"
    assert world.cluster.events_for("NodeClaim", "old-0")[-1] == "RebalanceReplacementFailed"
    assert not world.claim("old-0").metadata.deletion_timestamp  # left to the interruption warning


def test_rebalance_waits_for_do_not_disrupt_and_reason_less_budgets_before_deleting() -> None:
    world = World.of(REBALANCE_POLICY, candidates=2)
    outcome = world.start(world.command(replacements=[]))
    assert outcome.deleted == {}
    stored = world.cluster.stored("Pod", "p0", "default")
    assert stored is not None
    stored["metadata"]["annotations"] = {wk.ANNOTATION_DO_NOT_DISRUPT: "true"}
    pool = world.cluster.stored("NodePool", "default")
    assert pool is not None
    pool["spec"]["disruption"]["budgets"] = [{"nodes": "1"}, {"nodes": "0", "reasons": ["Drifted"]}]
    first = world.advance()
    assert first.waiting == {"old-0": f"pod default/p0 has {wk.ANNOTATION_DO_NOT_DISRUPT}"}
    assert first.deleted == {"old-1": "RebalanceRecommendation"}  # the budget without reasons allows one
    stored["metadata"]["annotations"] = {}
    second = world.advance()
    assert "budgets of NodePool default allow no disruption now" in second.waiting["old-0"]  # old-1 is deleting


def test_disruption_deletes_without_checking_again_what_its_method_decided() -> None:
    policy = DISRUPTION_POLICIES[0]
    world = World.of(policy)
    pool = world.cluster.stored("NodePool", "default")
    assert pool is not None
    pool["spec"]["disruption"]["budgets"] = [{"nodes": "0"}]  # changed after the decision
    targets = [Target(world.claim("old-0"), world.node("old-0") or {})]
    assert world.start(Command(policy.reason, targets)).deleted == {"old-0": policy.reason}
