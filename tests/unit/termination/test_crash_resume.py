"""An invocation may die at any point: before or after any write. The next sweep must resume and converge."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from autoscaler.apis.v1 import labels as wk
from autoscaler.controllers.termination import Stage, TerminationController
from autoscaler.kube.port import ObjectRef
from autoscaler_dev.harness import InvocationDied
from tests.support.memory_cloud import MemoryCloud
from tests.support.memory_cluster import MemoryCluster
from tests.unit.termination.builders import node, nodeclaim, pdb, pod

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
PROVIDER_ID = "aws:///us-east-1a/i-a"
MUTATIONS = {
    "cluster": ("write_status", "patch_metadata", "set_node_taints", "delete", "evict"),
    "cloud": ("delete",),
}


class Scenario:
    """A node under a 10 minute terminationGracePeriod with a PDB-guarded workload, a daemon, a do-not-disrupt
    pod and a volume; the "kubelet" finishes terminating pods between sweeps and the workload reschedules."""

    def __init__(self) -> None:
        self.now = T0
        self.budget = pdb("web", {"app": "web"}, expected=2, max_unavailable=1)
        self.cluster = MemoryCluster(clock=lambda: self.now)
        self.cloud = MemoryCloud(PROVIDER_ID)
        web_volume = [{"name": "data", "persistentVolumeClaim": {"claimName": "web-1-data"}}]
        self.cluster.add(
            nodeclaim(grace="10m"),
            node(),
            pod("web-1", labels={"app": "web"}, volumes=web_volume),
            pod("web-2", labels={"app": "web"}),
            pod("logs", daemon=True),
            pod("batch", grace=60, annotations={wk.ANNOTATION_DO_NOT_DISRUPT: "true"}),
            self.budget,
            {
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": "web-1-data", "namespace": "default"},
                "spec": {"volumeName": "pv"},
            },
            {
                "kind": "VolumeAttachment",
                "metadata": {"name": "va"},
                "spec": {"nodeName": "node-a", "source": {"persistentVolumeName": "pv"}},
            },
        )
        self.cluster.delete(ObjectRef("NodeClaim", "default-a"))
        self.cluster.writes.clear()
        self.cluster.write_times.clear()
        self.mutations = 0
        self.controller = TerminationController(self.cluster, self.cloud, clock=lambda: self.now)

    def die_at(self, target: int, after_write: bool) -> None:
        """Make the ``target``-th mutating call (counted over both ports) kill the invocation."""
        for port_name, methods in MUTATIONS.items():
            port = getattr(self, port_name)
            for method in methods:
                setattr(port, method, self._dying(getattr(port, method), target, after_write))

    def _dying(self, call: Callable[..., Any], target: int, after_write: bool) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            self.mutations += 1
            if self.mutations == target and not after_write:
                raise InvocationDied
            result = call(*args, **kwargs)
            if self.mutations == target:
                raise InvocationDied
            return result

        return wrapper

    def kubelet_and_controllers(self) -> None:
        for name in self.cluster.kubelet_removes_terminating_pods():
            if name == "web-1":
                self.cluster.remove("VolumeAttachment", "va")  # the volume detaches once its pod is gone
            if name.startswith("web"):
                self.cluster.add(pod(f"{name}-new", node="node-b", labels={"app": "web"}))

    def run_to_completion(self) -> int:
        for sweeps in range(1, 40):
            with contextlib.suppress(InvocationDied):
                self.controller.sweep()
            assert self.cluster.healthy(self.budget) >= 1  # the PDB holds through every crash
            self.kubelet_and_controllers()
            if not self.cluster.names("NodeClaim"):
                return sweeps
            self.now += timedelta(minutes=1)
        raise AssertionError(f"termination did not converge: {self.cluster.writes[-5:]}")


def test_the_uninterrupted_drain_takes_several_sweeps() -> None:
    scenario = Scenario()
    sweeps = scenario.run_to_completion()
    assert 5 <= sweeps <= 12
    assert scenario.mutations == 0 and len(scenario.cluster.writes) > 10


@pytest.mark.parametrize("after_write", [False, True], ids=["before-write", "after-write"])
def test_a_sweep_that_dies_at_any_write_is_resumed_by_the_next(after_write: bool) -> None:
    reference = Scenario()
    reference.die_at(0, after_write)
    reference.run_to_completion()
    total = reference.mutations
    assert total > 10
    for target in range(1, total + 1):
        scenario = Scenario()
        scenario.die_at(target, after_write)
        scenario.run_to_completion()
        cluster, writes = scenario.cluster, scenario.cluster.writes
        assert not cluster.names("Node") and not cluster.names("NodeClaim"), target
        assert scenario.cloud.states[PROVIDER_ID] == "shutting-down", target
        # Never early: the batch pod goes only at deadline minus its grace, the Node before the NodeClaim.
        assert min(cluster.written_at("delete Pod/batch")) >= T0 + timedelta(minutes=9), target
        assert writes.index("patch Node/node-a -finalizer") < writes.index("patch NodeClaim/default-a -finalizer")
        assert not any(w.startswith("delete Pod/web") for w in writes), target  # PDBs are never bypassed


def test_after_a_crash_the_next_sweep_reports_where_it_stands() -> None:
    scenario = Scenario()
    scenario.die_at(4, after_write=True)  # 1 annotate, 2 delete node, 3 taint, 4 label: died after labelling
    with pytest.raises(InvocationDied):
        scenario.controller.sweep()
    assert "evict default/web-1" not in scenario.cluster.writes
    result = scenario.controller.sweep()
    progress = result.of("default-a")
    assert progress is not None and progress.stage is Stage.DRAINING and progress.evicted == 1
    assert progress.blocked_by_pdb == 1 and progress.waiting_pods == 4
