"""NodeClaims carrying the record formats of the version before one orchestrator (an installation being upgraded
with commands in flight): read once, and each converges."""

from __future__ import annotations

import json
from datetime import timedelta

from autoscaler.apis.v1.conditions import timestamp
from autoscaler.controllers.orchestration import DISRUPTION_POLICIES, REBALANCE_POLICY, in_command
from autoscaler.controllers.orchestration.legacy import (
    OLD_DISRUPTION,
    OLD_REBALANCE_REPLACEMENT,
    OLD_REBALANCE_REPLACES,
)
from autoscaler.controllers.orchestration.record import REPLACES, CommandState
from tests.unit.disruption.world import NOW, condition
from tests.unit.orchestration.world import World, new_nodeclaim

DRIFTED = DISRUPTION_POLICIES[0]
OLD_KEYS = {OLD_DISRUPTION, OLD_REBALANCE_REPLACEMENT, OLD_REBALANCE_REPLACES}


def _annotate(world: World, name: str, **annotations: str) -> None:
    stored = world.cluster.stored("NodeClaim", name)
    assert stored is not None
    stored["metadata"].setdefault("annotations", {}).update(annotations)
    world.cluster.add(stored)


def _old_replacement(world: World, created_minutes_ago: int = 0, **annotations: str) -> str:
    made = world.cluster.create_nodeclaim(new_nodeclaim())
    stored = world.cluster.stored("NodeClaim", made.name)
    assert stored is not None
    stored["metadata"]["creationTimestamp"] = timestamp(NOW - timedelta(minutes=created_minutes_ago))
    stored["metadata"]["annotations"] = annotations
    world.cluster.add(stored)
    return made.name


def _old_disruption(world: World, expect: int, names: list[str]) -> None:
    stored = world.cluster.stored("NodeClaim", "old-0")
    assert stored is not None
    stored["metadata"]["annotations"][OLD_DISRUPTION] = json.dumps({"expect": expect, "replacements": names})
    stored["status"]["conditions"].append(condition("DisruptionReason", NOW, reason="Drifted"))
    world.cluster.add(stored)


def _no_old_keys(world: World) -> bool:
    return all(OLD_KEYS.isdisjoint(c.metadata.annotations or {}) for c in world.cluster.nodeclaims())


def test_an_old_disruption_command_carries_on_and_deletes_its_candidate() -> None:
    world = World.of(DRIFTED)
    replacement = _old_replacement(world, **{REPLACES: "old-0"})
    _old_disruption(world, 1, [replacement])
    world.initialize(replacement)
    outcome = world.advance()
    assert outcome.upgraded == ["old-0"] and outcome.deleted == {"old-0": "Drifted"} and _no_old_keys(world)
    record = world.record("old-0")
    assert record is not None and record.created == (replacement,) and record.started == NOW


def test_an_old_disruption_command_whose_names_were_never_recorded_adopts_or_gives_up() -> None:
    adopting = World.of(DRIFTED)
    replacement = _old_replacement(adopting, **{REPLACES: "old-0"})
    _old_disruption(adopting, 1, [])
    assert adopting.advance().adopted == [replacement]
    missing = World.of(DRIFTED)
    _old_disruption(missing, 1, [])
    assert missing.advance().abandoned == {"old-0": "its replacements were not all created"}
    assert missing.record("old-0") is None and _no_old_keys(missing)


def test_an_unreadable_old_disruption_record_gives_its_mark_up() -> None:
    world = World.of(DRIFTED)
    _old_disruption(world, 1, [])
    _annotate(world, "old-0", **{OLD_DISRUPTION: "{not json"})
    outcome = world.advance()
    assert outcome.abandoned == {"old-0": "its command record is missing"} and _no_old_keys(world)


def test_an_old_rebalance_list_waits_from_when_its_replacement_was_created_then_drains() -> None:
    world = World.of(REBALANCE_POLICY)
    replacement = _old_replacement(world, 5, **{REPLACES: "old-0", OLD_REBALANCE_REPLACES: "old-0"})
    _annotate(world, "old-0", **{OLD_REBALANCE_REPLACEMENT: replacement})
    first = world.advance()
    assert sorted(first.upgraded) == sorted(["old-0", replacement]) and _no_old_keys(world)
    record = world.record("old-0")
    assert record is not None and record.state is CommandState.REPLACING
    assert record.started == NOW - timedelta(minutes=5)  # its timeout ran from the replacement's creation
    world.initialize(replacement)
    assert world.advance().deleted == {"old-0": "RebalanceRecommendation"}


def test_an_old_rebalance_failure_stays_failed_and_an_empty_list_drains() -> None:
    failed = World.of(REBALANCE_POLICY)
    _annotate(failed, "old-0", **{OLD_REBALANCE_REPLACEMENT: "Failed"})
    assert failed.advance().deleted == {}
    record = failed.record("old-0")
    assert record is not None and record.state is CommandState.FAILED
    empty = World.of(REBALANCE_POLICY)
    _annotate(empty, "old-0", **{OLD_REBALANCE_REPLACEMENT: ""})
    assert empty.advance().deleted == {"old-0": "RebalanceRecommendation"}


def test_old_rebalance_replacements_never_recorded_are_adopted() -> None:
    world = World.of(REBALANCE_POLICY)
    replacement = _old_replacement(world, **{REPLACES: "old-0", OLD_REBALANCE_REPLACES: "old-0"})
    outcome = world.advance()
    assert outcome.adopted == [replacement] and _no_old_keys(world)
    record = world.record("old-0")
    assert record is not None and record.created == (replacement,)


def test_each_pass_reads_only_the_old_formats_of_its_own_reasons() -> None:
    world = World.of(DRIFTED)
    _annotate(world, "old-0", **{OLD_REBALANCE_REPLACEMENT: "Failed"})
    world.advance()  # the disruption pass: the rebalance format is the provisioner's to read
    assert OLD_REBALANCE_REPLACEMENT in (world.claim("old-0").metadata.annotations or {})
    assert world.record("old-0") is None


def test_a_node_in_an_old_rebalance_command_is_in_a_command() -> None:
    world = World.of(DRIFTED)
    _annotate(world, "old-0", **{OLD_REBALANCE_REPLACEMENT: "default-x"})
    assert in_command(world.claim("old-0"))  # no disruption command starts for it before the upgrade
    _annotate(world, "old-0", **{OLD_REBALANCE_REPLACEMENT: "Failed"})
    assert not in_command(world.claim("old-0"))
