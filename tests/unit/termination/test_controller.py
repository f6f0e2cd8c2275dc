"""The termination executor over in-memory doubles of Kubernetes and EC2: the drain as a state machine."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from autoscaler import metrics as m
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.conditions import is_true, timestamp
from autoscaler.controllers.termination import Stage, SweepResult, TerminationController, metric_points
from autoscaler.kube.port import ObjectRef, TransientClusterError
from autoscaler.metrics import MetricPoint
from tests.support.memory_cloud import MemoryCloud
from tests.support.memory_cluster import MemoryCluster
from tests.support.metrics import total
from tests.unit.termination.builders import node, nodeclaim, pdb, pod

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
PROVIDER_ID = "aws:///us-east-1a/i-a"


@dataclass
class World:
    now: datetime = T0
    points: list[MetricPoint] = field(default_factory=list)  # every sweep's metrics

    def __post_init__(self) -> None:
        self.cluster = MemoryCluster(clock=lambda: self.now)
        self.cloud = MemoryCloud()
        self.controller = TerminationController(self.cluster, self.cloud, clock=lambda: self.now)

    def total(self, name: str, **dimensions: str) -> float:
        return total(self.points, name, **dimensions)

    def node_with_claim(self, *pods: dict[str, Any], grace: str | None = None) -> None:
        self.cloud.launch(PROVIDER_ID)
        self.cluster.add(nodeclaim(grace=grace), node(), *pods)

    def delete_nodeclaim(self, name: str = "default-a") -> None:
        self.cluster.delete(ObjectRef("NodeClaim", name))

    def sweep(self, after: timedelta = timedelta(0)) -> SweepResult:
        self.now += after
        result = self.controller.sweep()
        self.points += metric_points(result)
        return result


def test_deleting_a_nodeclaim_drains_taints_terminates_and_releases_node_then_nodeclaim() -> None:
    world = World()
    world.node_with_claim(pod("web-1", labels={"app": "web"}), pod("logs", daemon=True))
    world.delete_nodeclaim()

    first = world.sweep()
    assert first.of("default-a").stage is Stage.DRAINING  # type: ignore[union-attr]
    stored = world.cluster.stored("Node", "node-a")
    assert stored is not None
    assert stored["metadata"]["deletionTimestamp"]  # deleting the NodeClaim deleted its Node
    assert {"key": wk.TAINT_DISRUPTED, "effect": "NoSchedule"} in stored["spec"]["taints"]
    assert stored["metadata"]["labels"][wk.LABEL_EXCLUDE_FROM_LOAD_BALANCERS] == "karpenter"
    assert "evict default/web-1" in world.cluster.writes and "evict default/logs" not in world.cluster.writes

    world.cluster.kubelet_removes_terminating_pods()
    assert world.sweep(timedelta(seconds=10)).of("default-a").evicted == 1  # type: ignore[union-attr]
    assert "evict default/logs" in world.cluster.writes  # the daemon goes only after the workload left
    world.cluster.kubelet_removes_terminating_pods()

    final = world.sweep(timedelta(seconds=10))
    assert final.of("default-a").stage is Stage.FINISHED  # type: ignore[union-attr]
    assert not world.cluster.names("Node") and not world.cluster.names("NodeClaim")
    assert world.cloud.states[PROVIDER_ID] == "shutting-down"
    writes = world.cluster.writes
    assert writes.index("patch Node/node-a -finalizer") < writes.index("patch NodeClaim/default-a -finalizer")
    assert world.total(m.NODES_TERMINATED, nodepool="default", reason="Drained") == 1
    assert world.total(m.NODECLAIMS_TERMINATED, nodepool="default", capacity_type="on-demand") == 1
    assert world.total(m.NODE_TERMINATION_DURATION) == 20
    assert world.total(m.NODECLAIM_TERMINATION_DURATION) == 20
    assert world.total(m.EVICTION_REQUESTS, code="200") == 2
    assert world.sweep().progress == ()  # nothing left to do


def test_a_pdb_allowing_one_disruption_is_never_violated_and_the_drain_ends_as_pods_reschedule() -> None:
    world = World()
    replicas = [pod(f"web-{i}", labels={"app": "web"}) for i in range(3)]
    world.node_with_claim(*replicas)
    budget = pdb("web", {"app": "web"}, expected=3, max_unavailable=1)
    world.cluster.add(budget)
    world.delete_nodeclaim()

    sweeps, blocked = 0, 0
    while world.cluster.names("NodeClaim"):
        result = world.sweep(timedelta(seconds=60))
        sweeps += 1
        assert world.cluster.healthy(budget) >= 2  # at most one replica unavailable, at every step
        progress = result.of("default-a")
        if progress is not None:
            assert progress.evicted <= 1
            blocked += progress.blocked_by_pdb
        # The kubelet finishes the evicted pod, and its ReplicaSet reschedules a replacement elsewhere.
        for name in world.cluster.kubelet_removes_terminating_pods():
            world.cluster.add(pod(f"{name}-new", node="node-b", labels={"app": "web"}))
        assert sweeps < 10
    assert not any(w.startswith("delete Pod") for w in world.cluster.writes)  # only evictions, never a delete
    assert blocked == 3 and world.total(m.EVICTION_REQUESTS, code="429") == 3
    assert any(e.reason == "FailedDraining" and e.type == "Warning" for e in world.cluster.events)


def test_do_not_disrupt_pod_is_deleted_at_the_deadline_minus_its_grace_period_not_before() -> None:
    world = World()
    guarded = pod("batch", grace=120, annotations={wk.ANNOTATION_DO_NOT_DISRUPT: "true"})
    world.node_with_claim(guarded, grace="10m")
    world.delete_nodeclaim()

    world.sweep()
    recorded = world.cluster.nodeclaim("default-a").metadata.annotations  # type: ignore[union-attr]
    assert recorded == {wk.ANNOTATION_TERMINATION_TIMESTAMP: timestamp(T0 + timedelta(minutes=10))}
    assert any(e.reason == "TerminationGracePeriodExpiring" for e in world.cluster.events)
    while world.now + timedelta(seconds=30) < T0 + timedelta(minutes=8):
        assert world.sweep(timedelta(seconds=30)).of("default-a").stage is Stage.DRAINING  # type: ignore[union-attr]
        assert world.cluster.stored("Pod", "batch", "default")["metadata"].get("deletionTimestamp") is None  # type: ignore[index]
    assert not any("Pod/batch" in w or "evict" in w for w in world.cluster.writes)

    world.sweep(T0 + timedelta(minutes=8) - world.now)  # deadline minus the pod's 120 s
    assert "delete Pod/batch grace=120" in world.cluster.writes
    assert world.total(m.PODS_DELETED_AT_DEADLINE) == 1
    assert any(e.reason == "Disrupted" for e in world.cluster.events)
    world.cluster.kubelet_removes_terminating_pods()
    assert world.sweep(timedelta(minutes=2)).of("default-a").stage is Stage.FINISHED  # type: ignore[union-attr]
    assert world.total(m.NODES_TERMINATED, reason="GracePeriodExpired") == 1


def test_deleting_a_node_deletes_its_nodeclaim() -> None:
    world = World()
    world.node_with_claim()
    world.cluster.delete(ObjectRef("Node", "node-a"))
    assert world.sweep().of("node-a").stage is Stage.FINISHED  # type: ignore[union-attr]
    assert world.cluster.writes[1] == "delete NodeClaim/default-a"
    assert not world.cluster.names("NodeClaim") and not world.cluster.names("Node")
    assert world.cloud.states[PROVIDER_ID] == "shutting-down"


def test_an_instance_terminated_outside_our_control_finishes_at_once() -> None:
    world = World()
    guarded = pod("batch", annotations={wk.ANNOTATION_DO_NOT_DISRUPT: "true"})
    world.node_with_claim(guarded)
    world.delete_nodeclaim()
    assert world.sweep().of("default-a").stage is Stage.DRAINING  # type: ignore[union-attr]

    world.cloud.terminate_outside(PROVIDER_ID)
    # While the node still reports Ready its kubelet may be alive: keep draining.
    assert world.sweep(timedelta(seconds=10)).of("default-a").stage is Stage.DRAINING  # type: ignore[union-attr]
    world.cluster.stored("Node", "node-a")["status"]["conditions"][0]["status"] = "Unknown"  # type: ignore[index]
    assert world.sweep(timedelta(seconds=40)).of("default-a").stage is Stage.FINISHED  # type: ignore[union-attr]
    assert not world.cluster.names("NodeClaim") and not world.cluster.names("Node")
    assert world.total(m.NODES_TERMINATED, reason="InstanceGone") == 1


def test_a_nodeclaim_without_node_finishes_at_once_when_its_instance_is_gone_or_never_launched() -> None:
    world = World()
    world.cluster.add(nodeclaim("gone", "aws:///us-east-1a/i-gone", node_name=None), nodeclaim("failed", None))
    world.delete_nodeclaim("gone")
    world.delete_nodeclaim("failed")
    result = world.sweep()
    assert [p.stage for p in result.progress] == [Stage.FINISHED, Stage.FINISHED]
    assert not world.cluster.names("NodeClaim")
    assert world.cloud.calls == ["delete aws:///us-east-1a/i-gone"]  # nothing to ask for the unlaunched one


def test_waits_for_ec2_to_report_the_instance_shutting_down() -> None:
    world = World()
    world.cloud.shutdown_delay = 1
    world.node_with_claim()
    world.delete_nodeclaim()
    assert world.sweep().of("default-a").stage is Stage.AWAITING_INSTANCE_TERMINATION  # type: ignore[union-attr]
    claim_ = world.cluster.nodeclaim("default-a")
    assert claim_ is not None and is_true(claim_.status.conditions, "InstanceTerminating")  # type: ignore[union-attr]
    assert world.cluster.stored("Node", "node-a")["metadata"]["finalizers"]  # type: ignore[index]  # the Node outlives the instance
    assert world.sweep(timedelta(seconds=5)).of("default-a").stage is Stage.FINISHED  # type: ignore[union-attr]
    assert world.cloud.calls.count("delete " + PROVIDER_ID) == 1  # terminated once, then only observed
    assert world.total(m.INSTANCE_TERMINATION_DURATION) == 5


def test_drained_pods_volumes_must_detach_unless_the_deadline_passed() -> None:
    world = World()
    world.node_with_claim(grace="5m")
    world.cluster.add(
        {
            "kind": "VolumeAttachment",
            "metadata": {"name": "va-1"},
            "spec": {"nodeName": "node-a", "source": {"persistentVolumeName": "pv-1"}},
        }
    )
    world.delete_nodeclaim()
    assert world.sweep().of("default-a").stage is Stage.AWAITING_VOLUME_DETACHMENT  # type: ignore[union-attr]
    assert world.cloud.calls == []  # the instance waits for the volume
    assert world.sweep(timedelta(minutes=5)).of("default-a").stage is Stage.FINISHED  # type: ignore[union-attr]


def test_a_node_held_by_another_finalizer_keeps_its_nodeclaim_waiting() -> None:
    world = World()
    world.cloud.launch(PROVIDER_ID)
    world.cluster.add(nodeclaim(), node(finalizers=[wk.FINALIZER_TERMINATION, "example.com/protect"]))
    world.delete_nodeclaim()
    assert world.sweep().of("default-a").stage is Stage.AWAITING_NODE_DELETION  # type: ignore[union-attr]
    assert world.cluster.stored("Node", "node-a")["metadata"]["finalizers"]  # type: ignore[index] == ["example.com/protect"]
    assert world.sweep().of("default-a").stage is Stage.AWAITING_NODE_DELETION  # type: ignore[union-attr]
    world.cluster.patch_metadata(ObjectRef("Node", "node-a"), remove_finalizers=["example.com/protect"])
    assert world.sweep().of("default-a").stage is Stage.FINISHED  # type: ignore[union-attr]


def test_one_failing_nodeclaim_does_not_stop_the_others_and_is_counted() -> None:
    world = World()
    world.node_with_claim()
    broken = nodeclaim("broken", "aws:///us-east-1a/i-b", node_name="node-b")
    broken.metadata.annotations = {wk.ANNOTATION_TERMINATION_TIMESTAMP: "soon"}
    world.cloud.launch("aws:///us-east-1a/i-b")
    world.cluster.add(broken, node("node-b", "aws:///us-east-1a/i-b"))
    world.cloud.launch("aws:///us-east-1a/i-c")
    world.cluster.add(
        nodeclaim("flaky", "aws:///us-east-1a/i-c", node_name="node-c"), node("node-c", "aws:///us-east-1a/i-c")
    )
    for name in ("default-a", "broken", "flaky"):
        world.delete_nodeclaim(name)
    original_pods = world.cluster.pods

    def pods(node_name: str | None = None) -> list[dict[str, Any]]:
        if node_name == "node-c":
            raise TransientClusterError("503 from the API server")
        return original_pods(node_name)

    world.cluster.pods = pods  # type: ignore[method-assign]
    result = world.sweep()
    assert result.of("default-a").stage is Stage.FINISHED  # type: ignore[union-attr]
    assert result.of("broken").stage is Stage.FAILED and "'soon'" in result.of("broken").error  # type: ignore[union-attr,operator]
    assert result.of("flaky").error == "TransientClusterError: 503 from the API server"  # type: ignore[union-attr]
    assert world.total(m.TERMINATION_ERRORS) == 2
    assert result.as_dict()["failed"] == 2


def test_a_stale_copy_after_recording_the_deadline_is_reread_before_the_status_write() -> None:
    world = World()
    world.node_with_claim(grace="1h")
    world.delete_nodeclaim()
    assert world.sweep().of("default-a").stage is Stage.FINISHED  # type: ignore[union-attr]
    writes = world.cluster.writes
    assert writes.count("status NodeClaim/default-a") == 2  # one 409 on the stale copy, one after re-reading


def test_pairs_go_oldest_first_and_those_past_the_time_budget_are_deferred_to_the_next_sweep() -> None:
    world = World()
    for index in range(3):
        provider_id = f"aws:///us-east-1a/i-{index}"
        world.cloud.launch(provider_id)
        world.cluster.add(nodeclaim(f"claim-{index}", provider_id, node_name=None))
    for index in (2, 0, 1):  # deleted in this order, a minute apart
        world.now += timedelta(minutes=1)
        world.delete_nodeclaim(f"claim-{index}")
    budget = iter([60.0, 30.0, 5.0])  # seconds left before each pair
    result = world.controller.sweep(lambda: next(budget))
    assert [(p.nodeclaim, p.stage) for p in result.progress] == [
        ("claim-2", Stage.FINISHED),
        ("claim-0", Stage.FINISHED),
        ("claim-1", Stage.DEFERRED),
    ]
    assert world.cloud.calls == [
        "delete aws:///us-east-1a/i-2",
        "get aws:///us-east-1a/i-2",
        "delete aws:///us-east-1a/i-0",
        "get aws:///us-east-1a/i-0",
    ]
    assert world.sweep().of("claim-1").stage is Stage.FINISHED  # type: ignore[union-attr]
