"""Node repair (NodeRepair gate): unhealthy past toleration -> forcefully replaced, unless too many are unhealthy."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.conditions import timestamp
from autoscaler.controllers.disruption.repair import allowed_unhealthy, decide, unhealthy
from autoscaler.providers.aws.repair_policies import REPAIR_POLICIES
from tests.unit.disruption.world import NOW, World, node_and_claim, pod, pool


def sick(node: dict[str, Any], kind: str = "Ready", status: str = "False", minutes: float = 31) -> dict[str, Any]:
    since = timestamp(NOW - timedelta(minutes=minutes))
    others = [c for c in node["status"]["conditions"] if c["type"] != kind]
    node["status"]["conditions"] = [*others, {"type": kind, "status": status, "lastTransitionTime": since}]
    return node


def fleet(count: int, unhealthy_count: int, **condition: Any) -> list[Any]:
    nodepool = pool(disruption={"budgets": [{"nodes": "0"}]})  # budgets never hold repair
    objects: list[Any] = [nodepool]
    for i in range(count):
        claim, node = node_and_claim(f"n{i}", nodepool)
        objects += [claim, sick(node, **condition) if i < unhealthy_count else node]
    return objects


def test_the_threshold_is_twenty_percent_rounded_up() -> None:
    assert [allowed_unhealthy(n) for n in (1, 3, 5, 6, 10, 11)] == [1, 1, 1, 2, 2, 3]


def test_ready_false_or_unknown_and_the_agents_conditions_are_unhealthy_with_their_tolerations() -> None:
    _, node = node_and_claim("x", pool())
    assert unhealthy(node, REPAIR_POLICIES) is None
    found = unhealthy(sick(node, "Ready", "Unknown", minutes=1), REPAIR_POLICIES)
    assert found is not None and found.due is not None and found.since is not None
    assert found.due - found.since == timedelta(minutes=30)
    found = unhealthy(sick(node, "AcceleratedHardwareReady", "False", minutes=1), REPAIR_POLICIES)
    assert found is not None and found.condition_type == "AcceleratedHardwareReady"  # due first: 10 minutes


def test_a_node_unhealthy_past_its_toleration_is_replaced_ignoring_budgets_pdbs_and_do_not_disrupt() -> None:
    objects = fleet(6, 2)
    guarded = pod("guarded", "node-n0", annotations={wk.ANNOTATION_DO_NOT_DISRUPT: "true"})
    pdb = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "none", "namespace": "default"},
        "spec": {"selector": {}, "maxUnavailable": 0},
        "status": {"disruptionsAllowed": 0},
    }
    world = World.of(*objects, guarded, pdb)
    result = world.controller(repair_policies=REPAIR_POLICIES).run()
    assert result is not None
    assert result.outcome.deleted == {"n0": "Unhealthy", "n1": "Unhealthy"}
    for name in ("n0", "n1"):
        claim = world.claim(name)
        assert claim.metadata.deletion_timestamp
        assert (claim.metadata.annotations or {})[wk.ANNOTATION_TERMINATION_TIMESTAMP] == timestamp(NOW)
    assert not world.claim("n2").metadata.deletion_timestamp
    points = {(p.name, p.dimensions): p.value for p in result.metric_points()}
    dims = (("capacity_type", "on-demand"), ("condition", "ready"), ("image_id", ""), ("nodepool", "default"))
    assert points[("karpenter_nodeclaims_unhealthy_disrupted_total", dims)] == 2


def test_within_its_toleration_or_with_the_gate_off_nothing_is_repaired() -> None:
    world = World.of(*fleet(6, 1, minutes=29))
    result = world.controller(repair_policies=REPAIR_POLICIES).run()
    assert result is not None and "n0" not in result.outcome.deleted
    assert "tolerated until" in result.assessment.repairs.waiting["node-n0"]
    world = World.of(*fleet(6, 1))
    result = world.controller().run()  # no policies: the gate is off
    assert result is not None and "n0" not in result.outcome.deleted


def test_more_than_the_threshold_unhealthy_repairs_nothing_and_says_why() -> None:
    world = World.of(*fleet(3, 2))
    result = world.controller(repair_policies=REPAIR_POLICIES).run()
    assert result is not None and not result.outcome.deleted
    assert result.assessment.repairs.blocked == {
        "node-n0": "more than 20% nodes are unhealthy in the nodepool",
        "node-n1": "more than 20% nodes are unhealthy in the nodepool",
    }
    events = [e for e in world.cluster.events if e.reason == "NodeRepairBlocked"]
    assert {(e.regarding.kind, e.regarding.name, e.type) for e in events} == {
        ("Node", "node-n0", "Warning"),
        ("Node", "node-n1", "Warning"),
    }


def test_an_unhealthy_condition_without_a_readable_time_counts_but_is_never_due() -> None:
    objects = fleet(6, 1)
    objects[2]["status"]["conditions"][-1]["lastTransitionTime"] = "yesterday"
    claims = [o for o in objects if getattr(o, "kind", "") == "NodeClaim"]
    nodes = [o for o in objects if isinstance(o, dict)]
    found = decide(claims, nodes, REPAIR_POLICIES, NOW)
    assert not found.due and "unreadable" in found.waiting["node-n0"]


def test_plan_shows_repairs_due_and_held() -> None:
    from autoscaler.commands.plan_disruption import DisruptionPlan

    due = DisruptionPlan(World.of(*fleet(6, 1)).controller(repair_policies=REPAIR_POLICIES).assess())
    rows = {r["node"]: r for r in due.nodes()}
    assert rows["node-n0"]["action"] == "repair" and rows["node-n1"]["action"] != "repair"
    held = DisruptionPlan(World.of(*fleet(3, 2)).controller(repair_policies=REPAIR_POLICIES).assess())
    rows = {r["node"]: r for r in held.nodes()}
    assert rows["node-n0"]["action"] == "blocked" and rows["node-n0"]["reason"].startswith("repair held: more than")
