"""The world's kube-scheduler binds a pod nominated to a NodeClaim onto that NodeClaim's node only where
Kubernetes would: its filters see every node, so a DoNotSchedule zonal spread is judged over all zones, and a
nominated node that would break it is passed over (the pod goes where the spread allows, as kube-scheduler
places it, or waits)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from autoscaler.apis.v1 import labels as wk
from autoscaler_dev.kube_emulator import authentication as authn
from autoscaler_dev.kube_emulator.emulator import KubeEmulator
from autoscaler_dev.kube_emulator.enforcement import ActingAs
from autoscaler_dev.world.kube_access import SCHEDULER
from autoscaler_dev.world.kube_scheduler import KubeScheduler

SPREAD = {
    "maxSkew": 1,
    "topologyKey": wk.LABEL_ZONE,
    "whenUnsatisfiable": "DoNotSchedule",
    "labelSelector": {"matchLabels": {"app": "web"}},
}


def node(name: str, zone: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {wk.LABEL_ZONE: zone, wk.LABEL_HOSTNAME: name}},
        "spec": {"providerID": f"aws:///{zone}/i-{name}"},
        "status": {
            "allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod(name: str, node_name: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": "app", "image": "pause", "resources": {"requests": {"cpu": "1"}}}],
        "topologySpreadConstraints": [SPREAD],
    }
    if node_name:
        spec["nodeName"] = node_name
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"}},
        "spec": spec,
        "status": {"phase": "Running" if node_name else "Pending"},
    }


def test_a_nominated_node_that_would_break_a_zonal_spread_is_passed_over() -> None:
    kube = KubeEmulator()
    for name, zone in (("a-1", "us-west-2a"), ("a-2", "us-west-2a"), ("b-1", "us-west-2b")):
        kube.create(node(name, zone))
    kube.create(pod("web-1", node_name="a-1"))
    pending = kube.create(pod("web-2"))
    nominated = {wk.ANNOTATION_NOMINATED_PODS: pending["metadata"]["uid"]}
    kube.create(
        {
            "apiVersion": wk.API_VERSION,
            "kind": "NodeClaim",
            "metadata": {"name": "default-x", "annotations": nominated},
            "spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                "requirements": [{"key": wk.LABEL_ZONE, "operator": "In", "values": ["us-west-2a"]}],
            },
            "status": {"providerID": "aws:///us-west-2a/i-a-2"},
        }
    )
    scheduler = KubeScheduler(
        kube, ActingAs.of(kube, SCHEDULER), lambda n: ActingAs.of(kube, authn.node(n)), lambda: datetime.now(UTC)
    )
    scheduler.step()
    bound = {p["metadata"]["name"]: p["spec"].get("nodeName") for p in kube.list("v1", "Pod")}
    assert bound == {"web-1": "a-1", "web-2": "b-1"}  # a-2 would make us-west-2a hold 2 and us-west-2b 0
