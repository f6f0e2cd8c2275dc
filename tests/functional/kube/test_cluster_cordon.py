"""The adapter's cordon (unschedulable + a taint in one guarded write) and its events from many threads,
against the emulator over HTTP."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from autoscaler.kube.client import KubernetesCluster
from autoscaler.kube.port import Event, ObjectRef
from autoscaler_dev.kube_emulator.emulator import KubeEmulator
from tests.support.kube import node

DISRUPTED = {"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}
TEAM = {"key": "team", "value": "a", "effect": "NoSchedule"}


def writes(kube: KubeEmulator) -> int:
    return sum(n for request, n in kube.requests.items() if not request.startswith("GET"))


def test_cordon_is_one_write_that_keeps_other_taints(kube: KubeEmulator, cluster: KubernetesCluster) -> None:
    listed = kube.create({**node("n1"), "spec": {"providerID": "aws:///us-west-2a/i-1", "taints": [TEAM]}})
    before = dict(kube.requests)
    stored = cluster.cordon(listed, DISRUPTED)
    assert stored is not None and stored["spec"]["unschedulable"] is True
    assert stored["spec"]["taints"] == [TEAM, DISRUPTED]
    assert {k: v - before.get(k, 0) for k, v in kube.requests.items() if v != before.get(k, 0)} == {"PATCH nodes": 1}
    assert cluster.cordon(stored, DISRUPTED) == stored  # already cordoned: nothing to write
    assert kube.requests["PATCH nodes"] == 1


def test_cordon_from_a_stale_read_re_reads_instead_of_dropping_a_taint(
    kube: KubeEmulator, cluster: KubernetesCluster
) -> None:
    stale = kube.create(node("n1"))
    cluster.set_node_taints("n1", [TEAM])  # someone else's write since we listed the node
    stored = cluster.cordon(stale, DISRUPTED)
    assert stored is not None and stored["spec"]["taints"] == [TEAM, DISRUPTED]
    assert kube.get("v1", "Node", "n1")["spec"]["taints"] == [TEAM, DISRUPTED]  # type: ignore[index]


def test_cordon_of_a_node_that_is_gone(kube: KubeEmulator, cluster: KubernetesCluster) -> None:
    listed = kube.create(node("n1"))
    kube.delete("v1", "Node", "n1")
    assert cluster.cordon(listed, DISRUPTED) is None


def test_events_recorded_from_many_threads(kube: KubeEmulator, cluster: KubernetesCluster) -> None:
    def record(n: int) -> None:
        cluster.record_event(Event(ObjectRef("Node", f"n{n % 50}"), "SpotInterrupted", "twice per node", "Warning"))

    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(record, range(200)))
    events = kube.list("events.k8s.io/v1", "Event")
    assert sorted(e["regarding"]["name"] for e in events) == sorted(f"n{n}" for n in range(50))  # deduplicated
    assert writes(kube) == 50
