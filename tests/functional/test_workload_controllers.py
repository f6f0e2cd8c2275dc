"""The embedded world's controller manager over the emulator's store: Deployments roll out through ReplicaSets,
StatefulSets keep ordinals and claims (bound in the zone of their first consumer), DaemonSets put a pod on each
node they fit, Jobs run to completion, budgets get the status the disruption controller computes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from autoscaler_dev.kube_emulator.emulator import KubeEmulator
from autoscaler_dev.world import kubelet
from autoscaler_dev.world.controllers import ControllerManager
from autoscaler_dev.world.controllers.job import RUN_SECONDS


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def world() -> tuple[KubeEmulator, ControllerManager, Clock]:
    clock = Clock()
    kube = KubeEmulator(clock=clock)  # no HTTP needed: the controllers write to the store, as informers' clients
    return kube, ControllerManager(kube, clock), clock


def template(app: str, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": app}},
        "spec": {"containers": [{"name": "app", "image": f"{app}:1"}], **spec},
    }


def workload(kind: str, name: str, **spec: Any) -> dict[str, Any]:
    body = {"selector": {"matchLabels": {"app": name}}, "template": template(name), **spec}
    api = "batch/v1" if kind == "Job" else "apps/v1"
    return {"apiVersion": api, "kind": kind, "metadata": {"name": name, "namespace": "default"}, "spec": body}


def node(kube: KubeEmulator, name: str, zone: str = "us-west-2a", **labels: str) -> None:
    all_labels = {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone, **labels}
    kube.create(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": all_labels},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]},
        }
    )


def pods(kube: KubeEmulator, app: str) -> list[dict[str, Any]]:
    return sorted(
        (p for p in kube.list("v1", "Pod") if p["metadata"]["labels"].get("app") == app),
        key=lambda p: p["metadata"]["name"],
    )


def start_all(kube: KubeEmulator, on: str = "n1") -> None:
    """The scheduler's and kubelets' part: every pending pod bound and running."""
    for pod in kube.list("v1", "Pod"):
        if not pod["spec"].get("nodeName"):
            kubelet.bind(kube, pod, on)


def test_a_deployment_gets_a_replicaset_and_rolls_out_within_its_surge(world: Any) -> None:
    kube, manager, _ = world
    node(kube, "n1")
    kube.create(workload("Deployment", "web", replicas=4))
    manager.step()
    (first,) = kube.list("apps/v1", "ReplicaSet")
    assert first["metadata"]["ownerReferences"][0]["kind"] == "Deployment"
    assert len(pods(kube, "web")) == 4
    start_all(kube)
    manager.step()
    manager.step()
    status = kube.get("apps/v1", "Deployment", "web")["status"]
    assert (status["updatedReplicas"], status["availableReplicas"]) == (4, 4)
    assert {c["type"]: c["reason"] for c in status["conditions"]}["Progressing"] == "NewReplicaSetAvailable"

    changed = kube.get("apps/v1", "Deployment", "web")
    changed["spec"]["template"]["spec"]["containers"][0]["image"] = "web:2"
    kube.apply(changed)
    manager.step()
    replicasets = kube.list("apps/v1", "ReplicaSet")
    assert len(replicasets) == 2
    total = sum(rs["spec"]["replicas"] for rs in replicasets)
    assert total <= 4 + 1  # maxSurge 25% of 4
    for _ in range(8):  # each step, new pods start and old ones go, never below 3 available (maxUnavailable 25%)
        start_all(kube)
        manager.step()
        assert sum(bool(p["spec"].get("nodeName")) for p in pods(kube, "web")) >= 3
    images = {p["spec"]["containers"][0]["image"] for p in pods(kube, "web")}
    assert images == {"web:2"} and len(pods(kube, "web")) == 4
    assert kube.get("apps/v1", "Deployment", "web")["status"]["updatedReplicas"] == 4


def test_a_replicaset_scales_down_unscheduled_pods_first(world: Any) -> None:
    kube, manager, _ = world
    node(kube, "n1")
    kube.create(workload("ReplicaSet", "rs", replicas=3))
    manager.step()
    running = pods(kube, "rs")[:2]
    for pod in running:
        kubelet.bind(kube, pod, "n1")
    scaled = kube.get("apps/v1", "ReplicaSet", "rs")
    kube.apply({**scaled, "spec": {**scaled["spec"], "replicas": 2}})
    manager.step()
    assert [p["metadata"]["name"] for p in pods(kube, "rs")] == [p["metadata"]["name"] for p in running]


def test_a_statefulset_creates_ordinals_in_order_with_claims_bound_in_the_consumers_zone(world: Any) -> None:
    kube, manager, _ = world
    node(kube, "n1", zone="us-west-2b")
    kube.create(
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": "gp3"},
            "provisioner": "ebs.csi.aws.com",
            "volumeBindingMode": "WaitForFirstConsumer",
        }
    )
    claim = {
        "metadata": {"name": "data"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "gp3",
            "resources": {"requests": {"storage": "5Gi"}},
        },
    }
    kube.create(workload("StatefulSet", "db", replicas=2, volumeClaimTemplates=[claim]))
    manager.step()
    assert [p["metadata"]["name"] for p in pods(kube, "db")] == ["db-0"]  # OrderedReady: one at a time
    (pending,) = kube.list("v1", "PersistentVolumeClaim")
    assert pending["metadata"]["name"] == "data-db-0" and pending["status"]["phase"] == "Pending"
    assert pods(kube, "db")[0]["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"] == "data-db-0"
    start_all(kube)
    manager.step()
    bound = kube.get("v1", "PersistentVolumeClaim", "data-db-0")
    assert bound["status"]["phase"] == "Bound"
    volume = kube.get("v1", "PersistentVolume", bound["spec"]["volumeName"], "")
    term = volume["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]
    assert term == {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-west-2b"]}
    assert [p["metadata"]["name"] for p in pods(kube, "db")] == ["db-0", "db-1"]
    start_all(kube)
    manager.step()
    shrunk = kube.get("apps/v1", "StatefulSet", "db")
    kube.apply({**shrunk, "spec": {**shrunk["spec"], "replicas": 1}})
    manager.step()
    assert [p["metadata"]["name"] for p in pods(kube, "db")] == ["db-0"]  # the highest ordinal goes
    assert {c["metadata"]["name"] for c in kube.list("v1", "PersistentVolumeClaim")} == {"data-db-0", "data-db-1"}


def test_a_daemonset_runs_one_pod_per_node_it_fits(world: Any) -> None:
    kube, manager, _ = world
    node(kube, "n1")
    node(kube, "n2", **{"kubernetes.io/os": "windows"})
    kube.create(
        workload("DaemonSet", "agent", template=template("agent", nodeSelector={"kubernetes.io/hostname": "n1"}))
    )
    kube.create(workload("DaemonSet", "logs"))
    tainted = kube.get("v1", "Node", "n2", "")
    kube.apply({**tainted, "spec": {"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]}})
    node(kube, "n3")
    manager.step()
    placed = {(p["metadata"]["labels"]["app"], p["spec"]["nodeName"]) for p in kube.list("v1", "Pod")}
    assert placed == {("agent", "n1"), ("logs", "n1"), ("logs", "n3")}  # n2's taint is not tolerated
    kube.delete("v1", "Node", "n3", "")
    manager.step()
    assert {p["spec"]["nodeName"] for p in pods(kube, "logs")} == {"n1"}
    status = kube.get("apps/v1", "DaemonSet", "logs")["status"]
    assert (status["desiredNumberScheduled"], status["currentNumberScheduled"]) == (1, 1)


def test_a_job_runs_its_completions_then_is_complete(world: Any) -> None:
    kube, manager, clock = world
    node(kube, "n1")
    job = workload("Job", "batch", completions=3, parallelism=2)
    del job["spec"]["selector"]
    kube.create(job)
    for _ in range(6):
        manager.step()
        start_all(kube)
        clock.now += timedelta(seconds=RUN_SECONDS + 1)
    manager.step()
    phases = [p["status"]["phase"] for p in kube.list("v1", "Pod")]
    assert phases.count("Succeeded") == 3 and len(phases) == 3
    status = kube.get("batch/v1", "Job", "batch")["status"]
    assert status["succeeded"] == 3 and status["conditions"][0]["type"] == "Complete"
    for pod in kube.list("v1", "Pod"):  # drained away after they finished: the Job stays complete
        kube.delete("v1", "Pod", pod["metadata"]["name"])
    manager.step()
    assert kube.list("v1", "Pod") == [] and kube.get("batch/v1", "Job", "batch")["status"]["succeeded"] == 3


def test_a_budgets_status_counts_the_expected_pods_from_the_owners_scale(world: Any) -> None:
    kube, manager, _ = world
    node(kube, "n1")
    kube.create(workload("Deployment", "web", replicas=4))
    budget = {"minAvailable": "50%", "selector": {"matchLabels": {"app": "web"}}}
    kube.create({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web"}, "spec": budget})
    manager.step()
    manager.step()
    for pod in pods(kube, "web")[:3]:
        kubelet.bind(kube, pod, "n1")
    manager.step()
    status = kube.get("policy/v1", "PodDisruptionBudget", "web")["status"]
    assert (status["expectedPods"], status["currentHealthy"], status["desiredHealthy"]) == (4, 3, 2)
    assert status["disruptionsAllowed"] == 1
