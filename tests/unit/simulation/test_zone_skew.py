"""The zonal spread the world judges: a workload's running pods over the zones of Karpenter's nodes, against its
DoNotSchedule ``maxSkew`` — and not once the workload was scaled down (the ReplicaSet controller removes pods
without regard to zones, so that skew is not the autoscaler's)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from autoscaler.apis.v1 import labels as wk
from autoscaler_dev.kube_emulator.emulator import KubeEmulator
from autoscaler_dev.world.spread import zone_skews
from autoscaler_dev.world.workloads import Workload

SPREAD = {
    "topologySpreadConstraints": [
        {
            "maxSkew": 1,
            "topologyKey": wk.LABEL_ZONE,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}},
        }
    ],
    "containers": [{"name": "app", "image": "pause"}],
}


def _node(kube: KubeEmulator, name: str, zone: str) -> None:
    labels = {wk.LABEL_NODEPOOL: "default", wk.LABEL_ZONE: zone}
    kube.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}})


def _pod(kube: KubeEmulator, name: str, node: str) -> None:
    kube.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"}},
            "spec": {**SPREAD, "nodeName": node},
            "status": {"phase": "Running"},
        }
    )


def _world(pods_per_zone: dict[str, int]) -> tuple[Any, Workload]:
    kube = KubeEmulator()
    workload = Workload(
        "apps/v1",
        "Deployment",
        "default",
        "web",
        {"metadata": {"labels": {"app": "web"}}, "spec": SPREAD},
        lambda pod: (pod.get("metadata", {}).get("labels") or {}).get("app") == "web",
    )
    for zone, count in pods_per_zone.items():
        _node(kube, f"node-{zone}", zone)
        for i in range(count):
            _pod(kube, f"web-{zone}-{i}", f"node-{zone}")
    return SimpleNamespace(kube=kube, actors=SimpleNamespace(workloads={"web": workload})), workload


def test_a_skew_above_max_skew_is_reported_as_hard() -> None:
    sim, _ = _world({"us-west-2a": 4, "us-west-2b": 1, "us-west-2c": 1})
    (spread,) = zone_skews(sim)
    assert (spread.workload, spread.skew, spread.max_skew, spread.hard, spread.scaled_down) == (
        "web",
        3,
        1,
        True,
        False,
    )


def test_an_even_spread_is_within_max_skew() -> None:
    sim, _ = _world({"us-west-2a": 2, "us-west-2b": 2, "us-west-2c": 1})
    (spread,) = zone_skews(sim)
    assert spread.skew == 1 <= spread.max_skew


def test_a_zone_of_karpenter_nodes_without_a_pod_counts_as_zero() -> None:
    sim, _ = _world({"us-west-2a": 2, "us-west-2b": 2, "us-west-2c": 0})
    (spread,) = zone_skews(sim)
    assert spread.skew == 2


def test_a_workload_scaled_down_is_marked_so() -> None:
    sim, workload = _world({"us-west-2a": 4, "us-west-2b": 1, "us-west-2c": 1})
    sim.kube.create(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"replicas": 6, "selector": {"matchLabels": {"app": "web"}}, "template": workload.template},
        }
    )
    workload.scale(sim.kube, 8)
    assert not workload.scaled_down
    workload.scale(sim.kube, 6)
    assert workload.scaled_down
    (spread,) = zone_skews(sim)
    assert spread.scaled_down and spread.skew == 3
