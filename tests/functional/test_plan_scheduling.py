"""``autoscaler plan --embedded`` where the scheduler follows Karpenter (issue 27): DaemonSet overhead from the pods
that run, volume binding, namespace selectors over the pods given with ``-f``, self-affine pods pinned apart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from autoscaler.apis.resources import parse_resources
from autoscaler.apis.v1 import labels as wk
from autoscaler_dev.kube_emulator.emulator import KubeEmulator
from tests.functional.test_plan_command import POOL, plan_json, shared_world

__all__ = ["shared_world"]  # the fixture, shared with the plan command's tests


def _pod(name: str, namespace: str = "default", cpu: str = "500m", **spec: Any) -> dict[str, Any]:
    labels = spec.pop("labels", {})
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": cpu, "memory": "512Mi"}}}], **spec},
    }


def _cluster_context() -> list[dict[str, Any]]:
    """A DaemonSet whose template asks 4 cpu, and its one pod as admission left it (500m), on a dedicated node."""
    daemonset = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "agent", "namespace": "kube-system"},
        "spec": {
            "selector": {"matchLabels": {"app": "agent"}},
            "template": {
                "metadata": {"labels": {"app": "agent"}},
                "spec": {"containers": [{"name": "agent", "resources": {"requests": {"cpu": "4", "memory": "4Gi"}}}]},
            },
        },
    }
    capacity = {"cpu": "8", "memory": "32Gi", "pods": "58"}
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "system-1", "labels": {wk.LABEL_ZONE: "us-west-2a", wk.LABEL_HOSTNAME: "system-1"}},
        "spec": {"taints": [{"key": "dedicated", "value": "system", "effect": "NoSchedule"}]},
        "status": {"capacity": capacity, "allocatable": capacity, "conditions": [{"type": "Ready", "status": "True"}]},
    }
    agent = _pod("agent-x7k2p", "kube-system", nodeName="system-1", labels={"app": "agent"})
    agent["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": "ds-agent", "controller": True}
    ]
    agent["status"] = {"phase": "Running"}
    claims = [
        {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": "default"}}
        | {
            "spec": {
                "storageClassName": cls,
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
            }
        }
        for name, cls in (("static", ""), ("zonal", "zonal"))
    ]
    zonal = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": "zonal"},
        "provisioner": "ebs.csi.aws.com",
        "allowedTopologies": [{"matchLabelExpressions": [{"key": wk.LABEL_ZONE, "values": ["us-west-2b"]}]}],
    }
    return [daemonset, node, agent, *claims, zonal]


def _pending() -> list[dict[str, Any]]:
    amd64 = {wk.LABEL_ARCH: "amd64"}
    db_term = {
        "labelSelector": {"matchLabels": {"app": "db"}},
        "topologyKey": wk.LABEL_HOSTNAME,
        "namespaceSelector": {},
    }
    cache_term = {"labelSelector": {"matchLabels": {"app": "cache"}}, "topologyKey": wk.LABEL_ZONE}

    def affinity(term: dict[str, Any]) -> dict[str, Any]:
        return {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}

    def mounting(claim: str) -> list[dict[str, Any]]:
        return [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]

    return [
        _pod("app", cpu="2", nodeSelector=amd64),
        _pod("db", "team-b", labels={"app": "db"}, nodeSelector=amd64),
        _pod("client", "team-a", affinity=affinity(db_term), nodeSelector=amd64),
        _pod("static-user", volumes=mounting("static")),
        _pod("zonal-user", volumes=mounting("zonal")),
        *(
            _pod(
                f"cache-{zone[-1]}",
                labels={"app": "cache"},
                affinity=affinity(cache_term),
                nodeSelector={wk.LABEL_ZONE: zone},
            )
            for zone in ("us-west-2b", "us-west-2c")
        ),
    ]


def test_embedded_plan_schedules_as_karpenter_does(
    shared_world: list[KubeEmulator], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifests = tmp_path / "cluster.yaml"
    manifests.write_text(yaml.safe_dump_all([*POOL, *_cluster_context(), *_pending()]))
    plan = plan_json(capsys, "--embedded", "-f", str(manifests))
    claim_of = {pod: claim for claim in plan["nodeclaims"] for pod in claim["pods"]}
    # Each new node reserves the agent as it runs (500m), not as its template asks (4 cpu).
    for claim in plan["nodeclaims"]:
        pods_cpu = sum(2000 if pod == "default/app" else 500 for pod in claim["pods"])
        assert parse_resources(claim["requests"])["cpu"] - pods_cpu == 500, claim["pods"]
    # namespaceSelector {} finds the db pod given with -f in another namespace.
    assert claim_of["team-a/client"] is claim_of["team-b/db"]
    # A claim of no class waits for its volume; an Immediate class's allowed zones place the new node.
    unschedulable = {u["pod"]: u["reason"] for u in plan["unschedulable"]}
    assert set(unschedulable) == {"default/static-user"}
    assert "names no storage class" in unschedulable["default/static-user"]
    assert claim_of["default/zonal-user"]["zones"] == ["us-west-2b"]
    # Self-affine pods pinned to different zones each start their own.
    assert claim_of["default/cache-b"]["zones"] == ["us-west-2b"]
    assert claim_of["default/cache-c"]["zones"] == ["us-west-2c"]
