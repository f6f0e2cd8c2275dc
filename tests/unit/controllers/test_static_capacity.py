"""Static NodePools (spec.replicas): the reconciler keeps exactly ``replicas`` NodeClaims, within limits.nodes,
removing the least disruptive first; disruption replaces drifted static nodes by budget and never consolidates
them."""

from __future__ import annotations

from typing import Any

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.nodepool import NodePool
from autoscaler.cloudprovider.types import Drift
from autoscaler.controllers.orchestration.record import COMMAND
from autoscaler.controllers.state import ClusterState
from autoscaler.controllers.static import StaticController
from tests.unit.disruption.world import NOW, FakeCloud, World, node_and_claim, pod, pool

WIDE_OPEN = {"budgets": [{"nodes": "100%"}]}


def _static(replicas: int, **spec: Any) -> NodePool:
    return pool("static", replicas=replicas, **spec)


def _nodes(count: int, nodepool: NodePool, prefix: str = "n") -> list[Any]:
    objects: list[Any] = []
    for index in range(count):
        objects += node_and_claim(f"{prefix}{index}", nodepool)
    return objects


def _reconcile(world: World) -> Any:
    return StaticController(world.cluster, lambda: NOW).reconcile(ClusterState.read(world.cluster))


def _live(world: World, pool_name: str = "static") -> list[str]:
    return sorted(
        c.name
        for c in world.cluster.nodeclaims()
        if (c.metadata.labels or {}).get(wk.LABEL_NODEPOOL) == pool_name and not c.metadata.deletion_timestamp
    )


def test_a_static_pool_is_filled_to_its_replicas_with_its_templates_nodeclaims() -> None:
    nodepool = _static(3, labels={"team": "a"})
    world = World.of(nodepool, *_nodes(1, nodepool))
    result = _reconcile(world)
    assert len(result.created) == 2
    claim = result.created[0]
    assert claim.metadata.labels == {
        wk.LABEL_NODEPOOL: "static",
        "team": "a",
        "karpenter.k8s.aws/ec2nodeclass": "default",
    }
    keys = {r.key for r in claim.spec.requirements}
    assert wk.LABEL_INSTANCE_TYPE not in keys  # the provider picks the instance at launch
    assert wk.LABEL_CAPACITY_TYPE in keys and claim.metadata.owner_references[0].name == "static"
    assert len(_live(world)) == 3
    assert _reconcile(world).created == []  # converged: a second pass does nothing


def test_limits_nodes_caps_the_pool_counting_nodeclaims_still_being_deleted() -> None:
    nodepool = _static(5, limits={"nodes": "3"})
    claim, node = node_and_claim("gone", nodepool)
    leaving = claim.model_copy(
        update={"metadata": claim.metadata.model_copy(update={"deletion_timestamp": "2026-12-01T11:00:00Z"})}
    )
    world = World.of(nodepool, *_nodes(1, nodepool), leaving, node)
    result = _reconcile(world)
    assert len(result.created) == 1  # 3 - (1 running + 1 deleting)
    assert result.decisions["static"].held == "limits.nodes 3 reached"


def test_a_pool_that_is_not_ready_does_not_scale_up() -> None:
    nodepool = _static(2, template_spec={"nodeClassRef": {"group": wk.AWS_GROUP, "kind": "EC2NodeClass", "name": "x"}})
    result = _reconcile(World.of(nodepool))
    assert result.created == []
    assert (result.decisions["static"].held or "").startswith("the NodePool is not ready")


def test_scale_down_removes_unlaunched_then_empty_then_the_cheapest_to_disrupt() -> None:
    nodepool = _static(1)
    busy, pinned, empty = _nodes(1, nodepool, "busy"), _nodes(1, nodepool, "pinned"), _nodes(1, nodepool, "empty")
    unlaunched_claim = node_and_claim("fresh", nodepool)[0].model_copy(update={"status": None})
    pods = [
        pod("web-0", "node-busy0"),
        pod("db-0", "node-pinned0", annotations={wk.ANNOTATION_DO_NOT_DISRUPT: "true"}),
        pod("web-1", "node-pinned0"),
        pod(
            "ds",
            "node-empty0",
            ownerReferences=[{"kind": "DaemonSet", "name": "ds", "apiVersion": "apps/v1", "controller": True}],
        ),
    ]
    world = World.of(nodepool, *busy, *pinned, *empty, unlaunched_claim, *pods)
    decision = StaticController(world.cluster, lambda: NOW).decide(ClusterState.read(world.cluster))["static"]
    assert [(s.claim.name, s.why) for s in decision.remove] == [
        ("fresh", "not launched"),
        ("empty0", "empty"),
        ("busy0", "disruption cost 0.93"),
    ]
    _reconcile(world)
    assert _live(world) == ["pinned0"]  # the node with a do-not-disrupt pod goes last


def test_a_candidate_being_replaced_counts_for_scale_up_but_not_for_scale_down() -> None:
    nodepool = _static(2)
    claim, node = node_and_claim("old", nodepool, annotations={COMMAND: '{"reason": "Drifted", "started": "x"}'})
    world = World.of(nodepool, *_nodes(2, nodepool), claim, node)  # 2 running + the candidate
    decision = StaticController(world.cluster, lambda: NOW).decide(ClusterState.read(world.cluster))["static"]
    assert (decision.counts.running, decision.counts.pending_disruption) == (2, 1)
    assert decision.create == 0 and decision.remove == []


def test_consolidation_and_emptiness_leave_static_nodes_alone() -> None:
    nodepool = _static(3, disruption=WIDE_OPEN)
    found = World.of(nodepool, *_nodes(3, nodepool)).controller().assess()
    assert found.decisions.command is None
    assert found.statuses == {} or all(
        "Consolidatable" not in {c.type for c in wanted.conditions} for wanted in found.statuses.values()
    )
    assert found.decisions.blocked["node-n0"] == "its NodePool is static: consolidation leaves it"


def test_static_drift_replaces_with_fresh_nodeclaims_one_budget_at_a_time() -> None:
    nodepool = _static(3, disruption={"budgets": [{"nodes": "1"}]})
    drifts = {f"n{i}": Drift("AMIDrift", "ami-1 not among [ami-2]") for i in range(3)}
    world = World.of(nodepool, *_nodes(3, nodepool), cloud=FakeCloud(drifts=drifts))
    found = world.controller().assess()
    command = found.decisions.command
    assert command is not None and command.reason == "Drifted" and len(command.candidates) == 1
    (replacement,) = command.replacements
    assert replacement.nodepool == "static" and replacement.pods == () and replacement.options == ()
    assert "budget" in found.decisions.blocked["node-n1"]
    result = world.controller().run()
    assert result is not None and len(result.outcome.created) == 1


def test_static_drift_waits_while_the_pool_scales_down_and_respects_limits_nodes() -> None:
    drifts = {f"n{i}": Drift("AMIDrift", "ami-1 not among [ami-2]") for i in range(3)}
    shrinking = _static(2, disruption=WIDE_OPEN)
    found = World.of(shrinking, *_nodes(3, shrinking), cloud=FakeCloud(drifts=drifts)).controller().assess()
    assert found.decisions.command is None
    assert "scaling down" in found.decisions.blocked["node-n0"]
    capped = _static(3, disruption=WIDE_OPEN, limits={"nodes": "4"})
    found = World.of(capped, *_nodes(3, capped), cloud=FakeCloud(drifts=drifts)).controller().assess()
    assert found.decisions.command is not None and len(found.decisions.command.candidates) == 1
    assert found.decisions.blocked["node-n1"] == "limits.nodes leaves no room for its replacement"


def test_a_dynamic_pools_drift_is_unchanged_by_a_static_pool_beside_it() -> None:
    dynamic, static = pool(disruption=WIDE_OPEN), _static(1, disruption={"budgets": [{"nodes": "0"}]})
    drifts = {"d0": Drift("AMIDrift", "x"), "s0": Drift("AMIDrift", "x")}
    objects = [*node_and_claim("d0", dynamic), *node_and_claim("s0", static)]
    found = World.of(dynamic, static, *objects, cloud=FakeCloud(drifts=drifts)).controller().assess()
    command = found.decisions.command
    assert command is not None and [c.name for c in command.candidates] == ["d0"]
    assert "budget" in found.decisions.blocked["node-s0"] or "0" in found.decisions.blocked["node-s0"]
