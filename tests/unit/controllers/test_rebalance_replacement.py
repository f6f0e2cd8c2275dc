"""Proactive replacement on rebalance recommendations, the provisioner's half, through the real pass over the
in-memory cluster: launch once, drain once the replacement is initialized, give up when it fails."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from autoscaler import metrics as m
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.cloudprovider.unavailable import InMemoryUnavailableOfferings
from autoscaler.controllers.disruption.candidates import REPLACES
from autoscaler.controllers.interruption.rebalance import (
    ANNOTATION_REBALANCE_POLICY,
    ANNOTATION_REBALANCE_RECOMMENDED_AT,
    ANNOTATION_REBALANCE_REPLACEMENT,
    ANNOTATION_REBALANCE_REPLACES,
    REPLACEMENT_FAILED,
)
from autoscaler.controllers.provisioner_pass import PassResult, ProvisionerPass
from autoscaler.controllers.provisioning.events import EventThrottle
from autoscaler.controllers.provisioning.rebalance import DISRUPTION_REPLACES, REPLACEMENT_TTL
from tests.support.memory_cluster import MemoryCluster
from tests.unit.controllers.lifecycle_doubles import NOW, FakeCloud, node, nodeclaim
from tests.unit.controllers.provisioning_doubles import FakeCatalogue, nodepool, pending_pod, ready_nodeclass

OLD, OLD_NODE, OLD_ID = "default-old", "ip-10-0-0-1", "aws:///us-west-2a/i-0000000000000old"
UP = [
    {"type": t, "status": "True", "reason": t, "lastTransitionTime": "2026-11-30T11:00:00Z"}
    for t in ("Launched", "Registered", "Initialized", "Ready")
]


@dataclass
class Cloud(FakeCatalogue, FakeCloud):
    """The catalogue for scheduling and the launching cloud for the lifecycle step."""

    answers: dict[str, Any] = field(default_factory=dict)


def world(policy: str | None = "Replace", *, pods: int = 2, clock: Any = lambda: NOW) -> tuple[MemoryCluster, Cloud]:
    pool = nodepool(
        template_spec={
            "requirements": [{"key": wk.LABEL_CAPACITY_TYPE, "operator": "In", "values": ["spot", "on-demand"]}]
        }
    )
    if policy is not None:
        pool.metadata.annotations = {ANNOTATION_REBALANCE_POLICY: policy}
    cluster = MemoryCluster(pool, ready_nodeclass(), clock=clock)
    old = nodeclaim(OLD).to_dict()
    old["metadata"]["labels"].update(
        {wk.LABEL_INSTANCE_TYPE: "m5.large", wk.LABEL_ZONE: "us-west-2a", wk.LABEL_CAPACITY_TYPE: "spot"}
    )
    old["metadata"]["annotations"][ANNOTATION_REBALANCE_RECOMMENDED_AT] = "2026-11-30T11:58:00Z"
    old["status"] = {"providerID": OLD_ID, "nodeName": OLD_NODE, "conditions": UP}
    cluster.add(NodeClaim.model_validate(old), node(OLD_NODE, OLD_ID, taints=[], labels={wk.LABEL_NODEPOOL: "default"}))
    for i in range(pods):
        pod = pending_pod(f"web-{i}", "500m", "1Gi", nodeName=OLD_NODE)
        pod["status"] = {"phase": "Running"}
        cluster.add(pod)
    return cluster, Cloud()


def run(cluster: MemoryCluster, cloud: Cloud, clock: Any = lambda: NOW) -> PassResult:
    unavailable = InMemoryUnavailableOfferings()
    throttle = EventThrottle(clock=lambda: 0.0)
    return ProvisionerPass(cluster, cloud, unavailable, clock=clock, throttle=throttle).run()


def replacements(cluster: MemoryCluster) -> list[NodeClaim]:
    return [c for c in cluster.nodeclaims() if ANNOTATION_REBALANCE_REPLACES in (c.metadata.annotations or {})]


def record(cluster: MemoryCluster) -> str | None:
    claim = cluster.nodeclaim(OLD)
    assert claim is not None
    return (claim.metadata.annotations or {}).get(ANNOTATION_REBALANCE_REPLACEMENT)


def initialize(cluster: MemoryCluster, name: str) -> None:
    stored = cluster.stored("NodeClaim", name)
    assert stored is not None
    stored.setdefault("status", {})["conditions"] = UP


def test_an_opted_in_recommended_node_gets_one_replacement_launched_and_recorded() -> None:
    cluster, cloud = world()
    result = run(cluster, cloud)
    (new,) = replacements(cluster)
    assert (new.metadata.annotations or {})[ANNOTATION_REBALANCE_REPLACES] == OLD
    assert (new.metadata.annotations or {})[DISRUPTION_REPLACES] == OLD  # consolidation leaves it alone
    assert record(cluster) == new.name
    assert new.metadata.labels and new.metadata.labels[wk.LABEL_NODEPOOL] == "default"
    assert result.rebalance.recorded == {OLD: [new.name]} and [c.name for c in result.rebalance.created] == [new.name]
    assert result.lifecycle.launched == [new.name]  # launched by the same pass
    assert cluster.events_for("NodeClaim", OLD) == ["DisruptionLaunching"]
    stored_old = cluster.nodeclaim(OLD)
    assert stored_old is not None and not stored_old.metadata.deletion_timestamp
    created = [p for p in result.metric_points() if p.name == m.NODECLAIMS_CREATED]
    assert ("reason", "rebalance_recommendation") in created[0].dimensions
    assert result.summary()["rebalance"]["replacements_created"] == [new.name]
    # the next pass waits for it, and launches nothing more
    again = run(cluster, cloud)
    assert len(replacements(cluster)) == 1 and not again.rebalance.created
    assert again.rebalance.waiting == {OLD: f"replacement {new.name} is not initialized yet"}


def test_a_pass_that_died_before_recording_adopts_the_replacement_instead_of_launching_again() -> None:
    cluster, cloud = world()
    first = run(cluster, cloud)
    stored = cluster.stored("NodeClaim", OLD)
    assert stored is not None and len(first.rebalance.created) == 1
    del stored["metadata"]["annotations"][ANNOTATION_REBALANCE_REPLACEMENT]  # the pass died before recording
    second = run(cluster, cloud)
    (new,) = replacements(cluster)
    assert second.rebalance.adopted == [new.name] and not second.rebalance.created
    assert record(cluster) == new.name


def test_once_the_replacement_is_initialized_the_old_node_is_cordoned_and_its_nodeclaim_deleted() -> None:
    cluster, cloud = world()
    run(cluster, cloud)
    (new,) = replacements(cluster)
    initialize(cluster, new.name)
    result = run(cluster, cloud)
    assert result.rebalance.drained == [OLD]
    old = cluster.nodeclaim(OLD)
    assert old is not None and old.metadata.deletion_timestamp  # the termination function drains it
    stored_node = cluster.stored("Node", OLD_NODE)
    assert stored_node is not None and stored_node["spec"].get("unschedulable") is True
    assert {"key": wk.TAINT_DISRUPTED, "effect": "NoSchedule"} in stored_node["spec"]["taints"]
    assert cluster.events_for("NodeClaim", OLD)[-1] == "DisruptionTerminating"
    disrupted = [p for p in result.metric_points() if p.name == m.NODECLAIMS_DISRUPTED]
    assert ("reason", "rebalance_recommendation") in disrupted[0].dimensions
    assert not run(cluster, cloud).rebalance.drained  # once


def test_the_drain_waits_for_do_not_disrupt_and_for_budgets_that_apply_to_every_reason() -> None:
    cluster, cloud = world()
    run(cluster, cloud)
    (new,) = replacements(cluster)
    initialize(cluster, new.name)
    pod = cluster.stored("Pod", "web-0", "default")
    assert pod is not None
    pod["metadata"]["annotations"] = {wk.ANNOTATION_DO_NOT_DISRUPT: "true"}
    result = run(cluster, cloud)
    assert not result.rebalance.drained and "do-not-disrupt" in result.rebalance.waiting[OLD]
    pod["metadata"]["annotations"] = {}
    stored_pool = cluster.stored("NodePool", "default")
    assert stored_pool is not None
    stored_pool["spec"]["disruption"]["budgets"] = [{"nodes": "0"}]
    result = run(cluster, cloud)
    assert not result.rebalance.drained and "budgets" in result.rebalance.waiting[OLD]
    stored_pool["spec"]["disruption"]["budgets"] = [{"nodes": "0", "reasons": ["Drifted"]}]
    assert run(cluster, cloud).rebalance.drained == [OLD]


def test_a_deleted_replacement_is_a_recorded_failure_and_the_old_node_is_left_alone() -> None:
    cluster, cloud = world()
    run(cluster, cloud)
    (new,) = replacements(cluster)
    cluster.remove("NodeClaim", new.name)  # liveness deleted it, or a launch failed
    result = run(cluster, cloud)
    assert record(cluster) == REPLACEMENT_FAILED
    assert result.rebalance.gave_up == {OLD: f"replacement {new.name} failed to launch or was deleted"}
    assert cluster.events_for("NodeClaim", OLD)[-1] == "RebalanceReplacementFailed"
    old = cluster.nodeclaim(OLD)
    assert old is not None and not old.metadata.deletion_timestamp
    stored_node = cluster.stored("Node", OLD_NODE)
    assert stored_node is not None and not stored_node["spec"].get("unschedulable")
    later = run(cluster, cloud)
    assert not later.rebalance.created and not later.rebalance.gave_up and not replacements(cluster)


def test_a_replacement_not_initialized_in_time_fails_and_is_released_to_consolidation() -> None:
    now = [NOW]
    cluster, cloud = world(clock=lambda: now[0])
    run(cluster, cloud, clock=lambda: now[0])
    (new,) = replacements(cluster)
    now[0] = NOW + REPLACEMENT_TTL + timedelta(seconds=1)
    result = run(cluster, cloud, clock=lambda: now[0])
    assert record(cluster) == REPLACEMENT_FAILED and "not initialized within" in result.rebalance.gave_up[OLD]
    survivor = cluster.nodeclaim(new.name)
    assert survivor is None or REPLACES not in (survivor.metadata.annotations or {})


def test_a_nodepool_without_the_opt_in_gets_nothing() -> None:
    for policy in (None, "Notify", "replace"):
        cluster, cloud = world(policy)
        result = run(cluster, cloud)
        assert not replacements(cluster) and record(cluster) is None and not result.rebalance.created


def test_pods_that_fit_on_existing_capacity_need_no_replacement_and_the_node_drains_next_pass() -> None:
    cluster, cloud = world(pods=1)
    spare = nodeclaim("default-spare").to_dict()
    spare["status"] = {"providerID": "aws:///us-west-2a/i-spare", "nodeName": "ip-spare", "conditions": UP}
    cluster.add(NodeClaim.model_validate(spare), node("ip-spare", "aws:///us-west-2a/i-spare", taints=[]))
    run(cluster, cloud)
    assert record(cluster) == "" and not replacements(cluster)
    assert run(cluster, cloud).rebalance.drained == [OLD]


def test_the_recommended_spot_offering_is_excluded_so_pods_with_nowhere_else_to_go_fail_the_replacement() -> None:
    cluster, cloud = world()
    stored_pool = cluster.stored("NodePool", "default")
    assert stored_pool is not None
    stored_pool["spec"]["template"]["spec"]["requirements"] = [
        {"key": wk.LABEL_CAPACITY_TYPE, "operator": "In", "values": ["spot"]},
        {"key": wk.LABEL_ZONE, "operator": "In", "values": ["us-west-2a"]},
        {"key": wk.LABEL_INSTANCE_TYPE, "operator": "In", "values": ["m5.large"]},
    ]
    result = run(cluster, cloud)
    assert not replacements(cluster) and record(cluster) == REPLACEMENT_FAILED
    assert "fits nowhere else" in result.rebalance.gave_up[OLD]


def test_the_disruption_annotation_is_the_one_consolidation_reads() -> None:
    assert DISRUPTION_REPLACES == REPLACES
