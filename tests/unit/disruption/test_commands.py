"""Disruption commands across passes, through the disruption pass: replacements first, then the old nodes; give up
cleanly (unmark, untaint); survive a crash anywhere. The disruption policies' tests; the protocol every policy
shares is tested in tests/unit/orchestration."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.conditions import timestamp
from autoscaler.cloudprovider.lease import InMemoryLeases
from autoscaler.controllers.disruption.ledger import read_ledger
from autoscaler.controllers.orchestration.legacy import OLD_DISRUPTION
from autoscaler.controllers.orchestration.policy import REPLACEMENT_TIMEOUT
from autoscaler.controllers.orchestration.record import COMMAND, REPLACES, CommandState, new_record, read_record
from autoscaler.kube.port import ConflictError
from tests.unit.disruption.world import NOW, World, condition, node_and_claim, pod, pool

DISRUPTED = {"key": wk.TAINT_DISRUPTED, "effect": "NoSchedule"}


def _replacing_world() -> World:
    """One m5.2xlarge whose single pod fits a cheaper type: single-node consolidation replaces it."""
    nodepool = pool(disruption={"budgets": [{"nodes": "100%"}]})
    claim, node = node_and_claim("old", nodepool, "m5.2xlarge")
    return World.of(nodepool, claim, node, pod("a", "node-old", cpu="3"))


def _taints(world: World, node: str) -> list[Any]:
    return list((world.cluster.stored("Node", node) or {}).get("spec", {}).get("taints") or [])


def _initialize(world: World, name: str, instance_type: str = "") -> None:
    stored = world.cluster.stored("NodeClaim", name)
    assert stored is not None
    stored["status"] = {"conditions": [condition("Launched", NOW), condition("Initialized", NOW)]}
    if instance_type:  # launched as this on-demand type
        launched = {
            wk.LABEL_INSTANCE_TYPE: instance_type,
            wk.LABEL_CAPACITY_TYPE: "on-demand",
            wk.LABEL_ZONE: "us-west-2a",
        }
        stored["metadata"]["labels"] = {**stored["metadata"].get("labels", {}), **launched}
    world.cluster.add(stored)


def test_old_node_is_deleted_only_after_its_replacement_initializes() -> None:
    world = _replacing_world()
    first = world.controller().run()
    assert first is not None
    (replacement,) = first.outcome.created_names
    assert DISRUPTED in _taints(world, "node-old") and list(first.outcome.waiting) == ["old"]
    assert json.loads(world.claim("old").metadata.annotations[COMMAND]) == {  # type: ignore[index]
        "reason": "Underutilized",
        "expected": 1,
        "created": [replacement],
        "started": "2026-12-01T12:00:00Z",
        "state": "Replacing",
        "saving": 0.192,  # the savings ledger: m5.2xlarge at $0.384/h for an m5.xlarge at $0.192/h
        "price": 0.384,
        "displaced": 1,
    }
    assert first.summary()["waiting"] == ["old"] and first.summary()["replacements_created"] == [replacement]
    waiting = world.controller().run()
    assert waiting is not None and list(waiting.outcome.waiting) == ["old"] and not waiting.outcome.deleted
    _initialize(world, replacement, "m5.large")
    done = world.controller().run()
    assert done is not None and done.outcome.deleted == {"old": "Underutilized"}
    assert world.claim("old").metadata.deletion_timestamp
    assert any(e.reason == "DisruptionTerminating" for e in world.cluster.events)
    (entry,) = read_ledger(world.cluster.nodepool("default"))  # type: ignore[arg-type]
    assert entry.predicted == 0.192 and entry.displaced == 1
    assert entry.realized == round(0.384 - 0.096, 6)  # it launched as an m5.large, cheaper than predicted
    assert entry.nodes == ("old (m5.2xlarge/on-demand)",) and entry.replacements == (
        f"{replacement} (m5.large/on-demand)",
    )


def test_a_failed_replacement_gives_the_command_up_and_untaints_the_node() -> None:
    world = _replacing_world()
    first = world.controller().run()
    assert first is not None
    world.cluster.remove("NodeClaim", first.outcome.created_names[0])  # the launch failed: liveness deleted it
    second = world.controller().run()
    assert second is not None
    assert "failed to launch or was deleted" in second.outcome.abandoned["old"]
    assert DISRUPTED not in _taints(world, "node-old")
    assert "DisruptionReason" not in world.conditions("old")
    assert COMMAND not in (world.claim("old").metadata.annotations or {})
    assert any(e.reason == "DisruptionBlocked" and e.type == "Warning" for e in world.cluster.events)


def test_replacements_that_never_initialize_time_out() -> None:
    world = _replacing_world()
    assert world.controller().run() is not None
    world.now = NOW + REPLACEMENT_TIMEOUT + timedelta(minutes=1)
    later = world.controller().run()
    assert later is not None and "not initialized within" in later.outcome.abandoned["old"]


def test_a_replacement_that_could_not_be_created_gives_the_command_up() -> None:
    world = _replacing_world()
    world.cluster.fail("create_nodeclaim", ConflictError("the API server went away"))
    first = world.controller().run()
    assert first is not None and "creating a replacement failed" in first.outcome.abandoned["old"]
    assert DISRUPTED not in _taints(world, "node-old") and COMMAND not in (
        world.claim("old").metadata.annotations or {}
    )


def test_a_pass_that_died_before_creating_the_replacements_is_given_up() -> None:
    world = _replacing_world()
    for old_format in (False, True):  # the record, and the format of a version before the upgrade
        stored = world.cluster.stored("NodeClaim", "old")
        assert stored is not None
        launching = new_record("Underutilized", 1, NOW, CommandState.LAUNCHING).text()
        key, value = (
            (OLD_DISRUPTION, json.dumps({"expect": 1, "replacements": []})) if old_format else (COMMAND, launching)
        )
        stored["metadata"]["annotations"][key] = value
        stored["status"]["conditions"].append(condition("DisruptionReason", NOW, reason="Underutilized"))
        world.cluster.add(stored)
        world.now = NOW + timedelta(minutes=1)  # not yet Consolidatable again: the pass only cleans up
        again = world.controller().run()
        assert again is not None and again.outcome.abandoned["old"] == "its replacements were not all created"
        assert "DisruptionReason" not in world.conditions("old")
        assert {COMMAND, OLD_DISRUPTION}.isdisjoint(world.claim("old").metadata.annotations or {})


def test_a_pass_that_died_after_creating_the_replacements_adopts_them() -> None:
    """Deliberately changed: before one orchestrator ran both, disruption gave such a command up (and the
    replacement, still marked as replacing the node, was kept from consolidation until that node went)."""
    world = _replacing_world()
    first = world.controller().run()
    assert first is not None
    (replacement,) = first.outcome.created_names
    stored = world.cluster.stored("NodeClaim", "old")
    assert stored is not None
    stored["metadata"]["annotations"][COMMAND] = new_record("Underutilized", 1, NOW, CommandState.LAUNCHING).text()
    again = world.controller().run()
    assert again is not None and again.outcome.adopted == [replacement] and not again.outcome.abandoned
    record = read_record(world.claim("old"))
    assert record is not None and record.created == (replacement,) and DISRUPTED in _taints(world, "node-old")


def test_a_stray_disrupted_taint_is_removed_but_a_cordon_is_left_alone() -> None:
    nodepool = pool(disruption={"consolidateAfter": "Never"})
    claim, node = node_and_claim("n0", nodepool)
    node["spec"]["taints"] = [DISRUPTED]
    cordoned_claim, cordoned = node_and_claim("n1", nodepool)
    cordoned["spec"].update({"taints": [DISRUPTED], "unschedulable": True})
    world = World.of(nodepool, claim, node, cordoned_claim, cordoned, pod("a", "node-n0"), pod("b", "node-n1"))
    assert world.controller().run() is not None
    assert DISRUPTED not in _taints(world, "node-n0")
    assert DISRUPTED in _taints(world, "node-n1")


def test_passes_do_not_overlap() -> None:
    world = _replacing_world()
    leases = InMemoryLeases(lambda: world.now)
    assert leases.acquire("disruption", "other-pass", timedelta(minutes=4))
    assert world.controller(leases=leases).run("this-pass") is None
    assert world.cluster.events == [] and "DisruptionReason" not in world.conditions("old")
    leases.release("disruption", "other-pass")
    assert world.controller(leases=leases).run("this-pass") is not None


def test_a_repeated_pass_starts_no_second_command_for_the_same_node() -> None:
    world = _replacing_world()
    first = world.controller().run()
    second = world.controller().run()
    assert first is not None and second is not None
    assert len(first.outcome.created) == 1 and second.outcome.created == []
    assert "already being disrupted" in second.assessment.candidates.ineligible["node-old"]


def test_a_pod_leaving_moves_last_pod_event_time_to_the_pass() -> None:
    nodepool = pool(disruption={"consolidateAfter": "30m"})
    claim, node = node_and_claim("n0", nodepool)
    world = World.of(nodepool, claim, node, pod("a", "node-n0"), pod("b", "node-n0"))
    assert world.controller().run() is not None
    assert "Consolidatable" in world.conditions("n0")  # the pods came two days ago
    world.cluster.remove("Pod", "b", "default")
    world.now = NOW + timedelta(minutes=5)
    assert world.controller().run() is not None
    status = world.claim("n0").status
    assert status is not None and status.last_pod_event_time == timestamp(world.now)
    assert "Consolidatable" not in world.conditions("n0")
    world.now = NOW + timedelta(minutes=40)
    assert world.controller().run() is not None
    assert "Consolidatable" in world.conditions("n0")


def test_a_replacement_is_no_candidate_while_the_nodes_it_replaces_remain() -> None:
    world = _replacing_world()
    first = world.controller().run()
    assert first is not None
    (replacement,) = first.outcome.created_names
    stored = world.cluster.stored("NodeClaim", replacement)
    assert stored is not None
    stored["status"] = {
        "providerID": "aws:///us-west-2a/i-new",
        "conditions": [condition(c, NOW) for c in ("Launched", "Registered", "Initialized")],
    }
    labels = {**stored["metadata"]["labels"], wk.LABEL_INSTANCE_TYPE: "m5.xlarge", wk.LABEL_ZONE: "us-west-2a"}
    stored["metadata"]["labels"] = labels
    world.cluster.add(stored)
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "node-new", "labels": {**labels, wk.LABEL_INITIALIZED: "true"}},
        "spec": {"providerID": "aws:///us-west-2a/i-new"},
        "status": {
            "allocatable": {"cpu": "4", "memory": "16Gi", "pods": "58"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }
    world.cluster.add(node)
    done = world.controller().run()
    assert done is not None and done.outcome.deleted == {"old": "Underutilized"}  # and not the empty-looking new one
    assert "it replaces old" in done.assessment.candidates.ineligible["node-new"]


def test_giving_up_frees_the_replacement_for_consolidation() -> None:
    """Deliberately changed: a given-up command's replacement kept ``replaces`` and so could not be consolidated
    while the node it was for remained; now it is released, as rebalance replacement always released it."""
    world = _replacing_world()
    first = world.controller().run()
    assert first is not None
    (replacement,) = first.outcome.created_names
    world.now = NOW + REPLACEMENT_TIMEOUT + timedelta(minutes=1)
    later = world.controller().run()
    assert later is not None and "not initialized within" in later.outcome.abandoned["old"]
    assert REPLACES not in (world.claim(replacement).metadata.annotations or {})
