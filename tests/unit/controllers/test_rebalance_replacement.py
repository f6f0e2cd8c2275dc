"""Proactive replacement on rebalance recommendations, the provisioner's half, through the real pass over the
in-memory cluster: launch once, drain once the replacement is initialized, give up when it fails. These are the
rebalance policy's tests; the protocol all policies share is tested in tests/unit/orchestration."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from autoscaler import metrics as m
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.cloudprovider.unavailable import InMemoryUnavailableOfferings
from autoscaler.controllers.orchestration import REBALANCE_POLICY
from autoscaler.controllers.orchestration.record import (
    COMMAND,
    REPLACES,
    CommandRecord,
    CommandState,
    new_record,
    read_record,
    replaces,
)
from autoscaler.controllers.provisioner_pass import PassResult, ProvisionerPass
from autoscaler.controllers.provisioning.events import EventThrottle
from autoscaler.controllers.rebalance.recommendation import (
    ANNOTATION_REBALANCE_POLICY,
    ANNOTATION_REBALANCE_RECOMMENDED_AT,
)
from autoscaler.controllers.rebalance.replacement import awaits_replacement
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


REPLACEMENT_TTL = REBALANCE_POLICY.timeout


def replacements(cluster: MemoryCluster) -> list[NodeClaim]:
    return [c for c in cluster.nodeclaims() if REPLACES in (c.metadata.annotations or {})]


def record(cluster: MemoryCluster) -> CommandRecord | None:
    claim = cluster.nodeclaim(OLD)
    assert claim is not None
    return read_record(claim)


def failed(cluster: MemoryCluster) -> bool:
    found = record(cluster)
    return found is not None and found.state is CommandState.FAILED


def initialize(cluster: MemoryCluster, name: str) -> None:
    stored = cluster.stored("NodeClaim", name)
    assert stored is not None
    stored.setdefault("status", {})["conditions"] = UP


def test_an_opted_in_recommended_node_gets_one_replacement_launched_and_recorded() -> None:
    cluster, cloud = world()
    result = run(cluster, cloud)
    (new,) = replacements(cluster)
    assert replaces(new) == (OLD,)  # consolidation leaves it alone while OLD exists
    recorded = record(cluster)
    assert recorded is not None and recorded.created == (new.name,) and recorded.state is CommandState.REPLACING
    assert recorded.reason == "RebalanceRecommendation" and recorded.started == NOW
    assert new.metadata.labels and new.metadata.labels[wk.LABEL_NODEPOOL] == "default"
    outcome = result.rebalance.outcome
    assert outcome.recorded == {OLD: [new.name]} and outcome.created_names == [new.name]
    assert result.lifecycle.launched == [new.name]  # launched by the same pass
    assert cluster.events_for("NodeClaim", OLD) == ["DisruptionLaunching"]
    stored_old = cluster.nodeclaim(OLD)
    assert stored_old is not None and not stored_old.metadata.deletion_timestamp
    created = [p for p in result.metric_points() if p.name == m.NODECLAIMS_CREATED]
    assert ("reason", "rebalance_recommendation") in created[0].dimensions
    assert result.summary()["rebalance"]["replacements_created"] == [new.name]
    # the next pass waits for it, and launches nothing more
    again = run(cluster, cloud)
    assert len(replacements(cluster)) == 1 and not again.rebalance.outcome.created
    assert again.rebalance.outcome.waiting == {OLD: f"replacement {new.name} is not initialized yet"}


def test_a_pass_that_died_before_recording_adopts_the_replacement_instead_of_launching_again() -> None:
    cluster, cloud = world()
    first = run(cluster, cloud)
    stored = cluster.stored("NodeClaim", OLD)
    assert stored is not None and len(first.rebalance.outcome.created) == 1
    launching = new_record("RebalanceRecommendation", 1, NOW, CommandState.LAUNCHING)
    stored["metadata"]["annotations"][COMMAND] = launching.text()  # the pass died before recording the name
    second = run(cluster, cloud)
    (new,) = replacements(cluster)
    assert second.rebalance.outcome.adopted == [new.name] and not second.rebalance.outcome.created
    recorded = record(cluster)
    assert recorded is not None and recorded.created == (new.name,)


def test_once_the_replacement_is_initialized_the_old_node_is_cordoned_and_its_nodeclaim_deleted() -> None:
    cluster, cloud = world()
    run(cluster, cloud)
    (new,) = replacements(cluster)
    initialize(cluster, new.name)
    result = run(cluster, cloud)
    assert result.rebalance.outcome.deleted == {OLD: "RebalanceRecommendation"}
    assert result.summary()["rebalance"]["drained"] == [OLD]
    old = cluster.nodeclaim(OLD)
    assert old is not None and old.metadata.deletion_timestamp  # the termination function drains it
    stored_node = cluster.stored("Node", OLD_NODE)
    assert stored_node is not None and stored_node["spec"].get("unschedulable") is True
    assert {"key": wk.TAINT_DISRUPTED, "effect": "NoSchedule"} in stored_node["spec"]["taints"]
    assert cluster.events_for("NodeClaim", OLD)[-1] == "DisruptionTerminating"
    disrupted = [p for p in result.metric_points() if p.name == m.NODECLAIMS_DISRUPTED]
    assert ("reason", "rebalance_recommendation") in disrupted[0].dimensions
    assert not run(cluster, cloud).rebalance.outcome.deleted  # once


def test_the_drain_waits_for_do_not_disrupt_and_for_budgets_that_apply_to_every_reason() -> None:
    cluster, cloud = world()
    run(cluster, cloud)
    (new,) = replacements(cluster)
    initialize(cluster, new.name)
    pod = cluster.stored("Pod", "web-0", "default")
    assert pod is not None
    pod["metadata"]["annotations"] = {wk.ANNOTATION_DO_NOT_DISRUPT: "true"}
    result = run(cluster, cloud)
    assert not result.rebalance.outcome.deleted and "do-not-disrupt" in result.rebalance.outcome.waiting[OLD]
    pod["metadata"]["annotations"] = {}
    stored_pool = cluster.stored("NodePool", "default")
    assert stored_pool is not None
    stored_pool["spec"]["disruption"]["budgets"] = [{"nodes": "0"}]
    result = run(cluster, cloud)
    assert not result.rebalance.outcome.deleted and "budgets" in result.rebalance.outcome.waiting[OLD]
    stored_pool["spec"]["disruption"]["budgets"] = [{"nodes": "0", "reasons": ["Drifted"]}]
    assert list(run(cluster, cloud).rebalance.outcome.deleted) == [OLD]


def test_a_deleted_replacement_is_a_recorded_failure_and_the_old_node_is_left_alone() -> None:
    cluster, cloud = world()
    run(cluster, cloud)
    (new,) = replacements(cluster)
    cluster.remove("NodeClaim", new.name)  # liveness deleted it, or a launch failed
    result = run(cluster, cloud)
    assert failed(cluster)
    assert result.rebalance.outcome.abandoned == {OLD: f"replacement {new.name} failed to launch or was deleted"}
    assert cluster.events_for("NodeClaim", OLD)[-1] == "RebalanceReplacementFailed"
    old = cluster.nodeclaim(OLD)
    assert old is not None and not old.metadata.deletion_timestamp
    stored_node = cluster.stored("Node", OLD_NODE)
    assert stored_node is not None and not stored_node["spec"].get("unschedulable")
    later = run(cluster, cloud)
    assert not later.rebalance.outcome.created and not later.rebalance.outcome.abandoned and not replacements(cluster)


def test_a_replacement_not_initialized_in_time_fails_and_is_released_to_consolidation() -> None:
    now = [NOW]
    cluster, cloud = world(clock=lambda: now[0])
    run(cluster, cloud, clock=lambda: now[0])
    (new,) = replacements(cluster)
    now[0] = NOW + REPLACEMENT_TTL + timedelta(seconds=1)
    result = run(cluster, cloud, clock=lambda: now[0])
    assert failed(cluster) and "not initialized within" in result.rebalance.outcome.abandoned[OLD]
    survivor = cluster.nodeclaim(new.name)
    assert survivor is None or REPLACES not in (survivor.metadata.annotations or {})


def test_a_nodepool_without_the_opt_in_gets_nothing() -> None:
    for policy in (None, "Notify", "replace"):
        cluster, cloud = world(policy)
        result = run(cluster, cloud)
        assert not replacements(cluster) and record(cluster) is None and not result.rebalance.outcome.created


def test_pods_that_fit_on_existing_capacity_need_no_replacement_and_the_node_drains_next_pass() -> None:
    cluster, cloud = world(pods=1)
    spare = nodeclaim("default-spare").to_dict()
    spare["status"] = {"providerID": "aws:///us-west-2a/i-spare", "nodeName": "ip-spare", "conditions": UP}
    cluster.add(NodeClaim.model_validate(spare), node("ip-spare", "aws:///us-west-2a/i-spare", taints=[]))
    run(cluster, cloud)
    recorded = record(cluster)
    assert recorded is not None and (recorded.expected, recorded.created) == (0, ()) and not replacements(cluster)
    assert list(run(cluster, cloud).rebalance.outcome.deleted) == [OLD]


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
    assert not replacements(cluster) and failed(cluster)
    assert "fits nowhere else" in result.rebalance.outcome.abandoned[OLD]


def test_a_nodeclaim_awaits_a_replacement_while_recommended_and_in_no_command() -> None:
    recommended = {ANNOTATION_REBALANCE_RECOMMENDED_AT: "2026-11-30T11:58:00Z"}

    def claim(**annotations: str) -> NodeClaim:
        body = nodeclaim(OLD).to_dict()
        body["metadata"]["annotations"] = annotations
        return NodeClaim.model_validate(body)

    assert not awaits_replacement(claim()) and awaits_replacement(claim(**recommended))
    for state in CommandState:  # in progress, or given up (not tried twice)
        held = new_record("RebalanceRecommendation", 1, NOW, state).text()
        assert not awaits_replacement(claim(**recommended, **{COMMAND: held}))
    drifting = new_record("Drifted", 1, NOW, CommandState.REPLACING).text()
    assert not awaits_replacement(claim(**recommended, **{COMMAND: drifting}))  # one command at a time
    assert not awaits_replacement(claim(**recommended, **{COMMAND: "{not json"}))
    deleting = claim(**recommended)
    deleting.metadata.deletion_timestamp = "2026-11-30T12:00:00Z"
    assert not awaits_replacement(deleting)


def test_a_node_in_a_disruption_command_gets_no_second_replacement() -> None:
    cluster, cloud = world()
    stored = cluster.stored("NodeClaim", OLD)
    assert stored is not None
    drifting = new_record("Drifted", 1, NOW, CommandState.REPLACING, ("default-new",)).text()
    stored["metadata"]["annotations"][COMMAND] = drifting
    result = run(cluster, cloud)
    assert not replacements(cluster) and not result.rebalance.outcome.created
    recorded = record(cluster)
    assert recorded is not None and recorded.reason == "Drifted"  # the disruption pass's, left alone


def test_a_node_something_still_stands_in_for_waits_until_that_is_released() -> None:
    cluster, cloud = world()
    orphan = nodeclaim("default-orphan").to_dict()
    orphan["metadata"]["annotations"][REPLACES] = OLD  # a pass died while giving up an earlier command
    cluster.add(NodeClaim.model_validate(orphan))
    first = run(cluster, cloud)
    assert not first.rebalance.outcome.created and record(cluster) is None
    released = cluster.nodeclaim("default-orphan")
    assert released is not None and REPLACES not in (released.metadata.annotations or {})
    assert len(run(cluster, cloud).rebalance.outcome.created) == 1  # then it starts afresh
