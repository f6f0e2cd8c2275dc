"""The savings ledger: what each completed command predicted and realized, kept on its NodePool and listed by
``autoscaler plan --disruption``."""

from __future__ import annotations

from datetime import UTC, datetime

from autoscaler import metrics as m
from autoscaler.commands.plan_disruption import DisruptionPlan, render
from autoscaler.controllers.disruption.ledger import KEPT, LEDGER, LedgerEntry, read_ledger, with_entries
from tests.unit.disruption.test_commands import _initialize, _replacing_world
from tests.unit.disruption.world import World, node_and_claim, pool


def test_a_delete_only_command_realizes_its_candidates_prices_at_once() -> None:
    nodepool = pool()
    claim, node = node_and_claim("idle", nodepool, "m5.large")  # no pods: emptiness deletes it
    world = World.of(nodepool, claim, node)
    result = world.controller().run()
    assert result is not None and result.outcome.deleted == {"idle": "Empty"}
    (entry,) = read_ledger(world.cluster.nodepool("default"))  # type: ignore[arg-type]
    assert (entry.reason, entry.predicted, entry.realized, entry.displaced) == ("Empty", 0.096, 0.096, 0)
    realized = [p for p in result.metric_points() if p.name == m.DISRUPTION_REALIZED_SAVINGS]
    assert [(p.value, p.unit) for p in realized] == [(0.096, "None")]


def test_plan_lists_recent_commands_with_predicted_and_realized_savings() -> None:
    world = _replacing_world()
    first = world.controller().run()
    assert first is not None
    _initialize(world, first.outcome.created_names[0], "m5.xlarge")
    world.controller().run()
    plan = DisruptionPlan(world.controller().assess())
    (row,) = plan.recent_commands()
    assert row["nodePool"] == "default" and row["reason"] == "Underutilized"
    assert row["predictedPerHour"] == 0.192 and row["realizedPerHour"] == 0.192 and row["displacedPods"] == 1
    text = render(plan)
    assert "recent commands (savings ledger):" in text and "$0.1920/h" in text
    assert plan.as_dict()["recentCommands"] == [row]


def test_the_ledger_keeps_the_newest_entries_and_survives_an_unreadable_annotation() -> None:
    nodepool = pool()
    at = datetime(2026, 12, 1, tzinfo=UTC)
    entries = [LedgerEntry(reason="Empty", nodes=(f"n{i}",), started=at, completed=at) for i in range(KEPT + 3)]
    nodepool.metadata.annotations = {LEDGER: with_entries(nodepool, entries)}
    kept = read_ledger(nodepool)
    assert [e.nodes[0] for e in kept] == [f"n{i}" for i in range(3, KEPT + 3)]
    nodepool.metadata.annotations = {LEDGER: "{not json"}
    assert read_ledger(nodepool) == []
