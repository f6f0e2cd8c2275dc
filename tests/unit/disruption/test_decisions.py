"""Which nodes each method takes, and why it leaves the others: the rules users ask about most."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.common import Condition
from autoscaler.apis.v1.nodepool import NodePool
from autoscaler.cloudprovider.types import Drift
from tests.unit.disruption.world import NOW, FakeCloud, World, condition, node_and_claim, pod, pool

WIDE_OPEN = {"budgets": [{"nodes": "100%"}]}


def _nodes(count: int, nodepool: NodePool, instance_type: str = "m5.xlarge", **kwargs: Any) -> list[Any]:
    objects: list[Any] = []
    for index in range(count):
        objects += node_and_claim(f"n{index}", nodepool, instance_type, **kwargs)
    return objects


def _assess(world: World, **options: Any) -> Any:
    return world.controller(**options).assess()


def test_a_pdb_that_allows_no_disruption_keeps_its_node() -> None:
    nodepool = pool(disruption=WIDE_OPEN)
    labels = {"app": "db"}
    pods = [pod("db-0", "node-n0", labels=labels), pod("web-0", "node-n1")]
    pdb = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "db", "namespace": "default"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": labels}},
    }
    found = _assess(World.of(nodepool, *_nodes(2, nodepool), *pods, pdb))
    assert "PDB default/db" in found.decisions.blocked["node-n0"]
    command = found.decisions.command
    assert command is not None and [c.name for c in command.candidates] == ["n1"]


def test_do_not_disrupt_on_a_pod_or_a_node_keeps_it() -> None:
    nodepool = pool(disruption=WIDE_OPEN)
    claim, node = node_and_claim("n1", nodepool)
    node["metadata"]["annotations"] = {wk.ANNOTATION_DO_NOT_DISRUPT: "true"}
    pinned = pod("batch", "node-n0", annotations={wk.ANNOTATION_DO_NOT_DISRUPT: "true"})
    found = _assess(World.of(nodepool, *node_and_claim("n0", nodepool), claim, node, pinned))
    assert f"pod default/batch has {wk.ANNOTATION_DO_NOT_DISRUPT}" in found.decisions.blocked["node-n0"]
    assert f"the node has {wk.ANNOTATION_DO_NOT_DISRUPT}" in found.candidates.ineligible["node-n1"]
    assert found.decisions.command is None


def test_drift_under_a_termination_grace_period_ignores_blocking_pods() -> None:
    nodepool = pool(disruption={"consolidateAfter": "Never", **WIDE_OPEN})
    objects = _nodes(1, nodepool, terminationGracePeriod="1h") + _nodes(1, nodepool, "m5.2xlarge")[0:0]
    pinned = pod("batch", "node-n0", annotations={wk.ANNOTATION_DO_NOT_DISRUPT: "true"})
    cloud = FakeCloud(drifts={"n0": Drift("SubnetDrift", "instance is in subnet-1, no longer among the class's")})
    found = _assess(World.of(nodepool, *objects, pinned, cloud=cloud))
    assert found.decisions.command is not None and found.decisions.command.reason == "Drifted"


def test_a_zero_budget_in_its_window_blocks_drift_and_lets_it_go_after() -> None:
    window = {"nodes": "0", "reasons": ["Drifted"], "schedule": "0 11 * * *", "duration": "2h"}
    nodepool = pool(disruption={"consolidateAfter": "Never", "budgets": [window, {"nodes": "100%"}]})
    cloud = FakeCloud(drifts={"n0": Drift("AMIDrift", "ami-1 not among resolved [ami-2]")})
    world = World.of(nodepool, *_nodes(1, nodepool), cloud=cloud)
    found = _assess(world)
    assert found.decisions.command is None
    assert "active in window '0 11 * * *' for 2h" in found.decisions.blocked["node-n0"]
    world.now = NOW + timedelta(hours=1, minutes=1)  # 13:01, the window closed at 13:00
    after = _assess(world)
    assert after.decisions.command is not None and after.decisions.command.reason == "Drifted"


def test_nodes_not_ready_or_being_deleted_use_up_the_budget() -> None:
    nodepool = pool(disruption={"budgets": [{"nodes": "2"}]})
    objects = _nodes(3, nodepool) + list(node_and_claim("sick", nodepool, ready=False))
    deleting, node = node_and_claim("going", nodepool)
    deleting = deleting.model_copy(
        update={"metadata": deleting.metadata.model_copy(update={"deletion_timestamp": "2026-12-01T11:00:00Z"})}
    )
    found = _assess(World.of(nodepool, *objects, deleting, node))
    verdict = found.decisions.budgets[("default", "Empty")]
    assert (verdict.limit, verdict.disrupting, verdict.allowed) == (2, 2, 0)
    assert found.decisions.command is None


def test_consolidate_after_holds_nodes_whose_pods_just_changed() -> None:
    nodepool = pool(disruption={"consolidateAfter": "10m", **WIDE_OPEN})
    fresh = pod("new", "node-n0")
    fresh["status"]["conditions"][1]["lastTransitionTime"] = "2026-12-01T11:55:00Z"
    found = _assess(World.of(nodepool, *_nodes(1, nodepool), fresh))
    assert found.statuses["n0"].last_pod_event_time == "2026-12-01T11:55:00Z"
    assert not any(c.type == "Consolidatable" for c in found.statuses["n0"].conditions)
    assert "not consolidatable yet" in found.decisions.blocked["node-n0"]


def test_when_empty_pools_only_lose_empty_nodes() -> None:
    nodepool = pool(disruption={"consolidationPolicy": "WhenEmpty", **WIDE_OPEN})
    found = _assess(World.of(nodepool, *_nodes(2, nodepool), pod("a", "node-n0")))
    command = found.decisions.command
    assert command is not None and command.reason == "Empty" and [c.name for c in command.candidates] == ["n1"]
    claim, node = node_and_claim("n0", nodepool)
    busy = _assess(World.of(nodepool, claim, node, pod("a", "node-n0")))
    assert busy.decisions.command is None
    assert busy.decisions.blocked["node-n0"] == "its NodePool consolidates only empty nodes"


def test_spot_nodes_are_not_replaced_by_spot_unless_the_feature_gate_is_on() -> None:
    nodepool = pool(
        disruption=WIDE_OPEN,
        template_spec={"requirements": [{"key": wk.LABEL_CAPACITY_TYPE, "operator": "In", "values": ["spot"]}]},
    )
    objects = _nodes(1, nodepool, "m5.2xlarge", capacity_type="spot")
    found = _assess(World.of(nodepool, *objects, pod("a", "node-n0", cpu="1")))
    assert "SpotToSpotConsolidation is disabled" in found.decisions.blocked["node-n0"]
    enabled = _assess(World.of(nodepool, *objects, pod("a", "node-n0", cpu="1")), spot_to_spot=True)
    assert "requires 15 cheaper instance type options" in enabled.decisions.blocked["node-n0"]


def test_on_demand_replacements_that_may_be_spot_are_pinned_to_spot() -> None:
    both = {"key": wk.LABEL_CAPACITY_TYPE, "operator": "In", "values": ["on-demand", "spot"]}
    nodepool = pool(disruption=WIDE_OPEN, template_spec={"requirements": [both]})
    found = _assess(World.of(nodepool, *_nodes(1, nodepool, "m5.2xlarge"), pod("a", "node-n0", cpu="3")))
    command = found.decisions.command
    assert command is not None and command.decision == "replace"
    (replacement,) = command.replacements
    assert sorted(replacement.requirements[wk.LABEL_CAPACITY_TYPE].values) == ["spot"]
    assert command.savings is not None and command.savings > 0


def test_a_node_whose_pods_need_it_all_is_not_replaced_by_a_dearer_one() -> None:
    nodepool = pool(disruption=WIDE_OPEN)
    found = _assess(
        World.of(nodepool, *_nodes(1, nodepool, "m5.large"), pod("a", "node-n0", cpu="1500m", memory="6Gi"))
    )
    assert found.decisions.command is None
    assert found.decisions.blocked["node-n0"] == "Can't replace with a cheaper node"


def test_requirements_and_nodepool_hash_drift_are_found_without_the_provider() -> None:
    nodepool = pool(disruption={"consolidateAfter": "Never"})
    claim, node = node_and_claim("n0", nodepool, capacity_type="spot")  # the pool asks for on-demand only
    edited = pool(disruption={"consolidateAfter": "Never"}, labels={"team": "b"})
    found = _assess(World.of(nodepool, claim, node))
    assert found.statuses["n0"].conditions[-1].reason == "RequirementsDrifted"
    claim2, node2 = node_and_claim("n1", nodepool)
    found = _assess(World.of(edited, claim2, node2))
    drifted = next(c for c in found.statuses["n1"].conditions if c.type == "Drifted")
    assert drifted.reason == "NodePoolDrifted" and "hash changed" in drifted.message


def test_the_pods_of_a_node_already_being_replaced_keep_their_room() -> None:
    """n0 is in an earlier command (marked, its replacement on the way); n1 drifts. n2's free room fits one
    3-CPU pod: it is n0's pod's, so n1 cannot simply be deleted onto it and needs a replacement of its own."""
    nodepool = pool(disruption={"consolidateAfter": "Never", **WIDE_OPEN})
    marked, marked_node = node_and_claim("n0", nodepool)
    marked.status.conditions.append(  # type: ignore[union-attr]
        Condition.model_validate({**condition("DisruptionReason", NOW, reason="Drifted")})
    )
    objects = [marked, marked_node, *node_and_claim("n1", nodepool), *node_and_claim("n2", nodepool)]
    pods = [pod("a", "node-n0", cpu="3"), pod("b", "node-n1", cpu="3")]
    cloud = FakeCloud(drifts={"n1": Drift("AMIDrift", "ami-1 not among resolved [ami-2]")})
    command = _assess(World.of(nodepool, *objects, *pods, cloud=cloud)).decisions.command
    assert command is not None and [c.name for c in command.candidates] == ["n1"]
    assert command.decision == "replace" and len(command.replacements) == 1
