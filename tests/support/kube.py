"""Fixtures for tests that need Kubernetes: the API emulator over HTTP and a Cluster adapter bound to it.

Import them into a conftest (``from tests.support.kube import cluster, kube, kube_rest``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from autoscaler.kube.client import KubernetesCluster
from autoscaler.kube.connect import plain_client
from autoscaler.kube.rest import KubeRest, RetryPolicy
from autoscaler_dev.kube_emulator.emulator import KubeEmulator

FAST_RETRIES = RetryPolicy(attempts=4, base_delay=0.01, max_delay=0.05)


@pytest.fixture
def kube() -> Iterator[KubeEmulator]:
    """A fresh emulator on 127.0.0.1 and a free port (it starts in milliseconds)."""
    with KubeEmulator() as emulator:
        yield emulator


def rest_for(emulator: KubeEmulator, **options: Any) -> KubeRest:
    """A KubeRest on the official client, pointed at ``emulator``, with quick retries."""
    options.setdefault("retry", FAST_RETRIES)
    return KubeRest(plain_client(emulator.url), **options)


@pytest.fixture
def kube_rest(kube: KubeEmulator) -> KubeRest:
    return rest_for(kube)


@pytest.fixture
def cluster(kube_rest: KubeRest) -> KubernetesCluster:
    """The Cluster port's adapter bound to the emulator."""
    return KubernetesCluster(kube_rest)


def pod(
    name: str,
    *,
    namespace: str = "default",
    node: str = "",
    phase: str = "Running",
    labels: dict[str, str] | None = None,
    unschedulable: bool = False,
    ready: bool = True,
    owner_kind: str = "",
) -> dict[str, Any]:
    """A pod as the scheduler and kubelet leave it: bound and Ready, or Pending and unschedulable."""
    conditions = [{"type": "Ready", "status": "True" if ready else "False"}]
    if unschedulable:
        phase, conditions = (
            "Pending",
            [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": "0/3 nodes are available",
                }
            ],
        )
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "labels": labels or {}}
    if owner_kind:
        metadata["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": owner_kind, "name": "owner", "uid": "u-1", "controller": True}
        ]
    spec: dict[str, Any] = {"containers": [{"name": "app", "image": "app"}]}
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": spec,
        "status": {"phase": phase, "conditions": conditions},
    }


def node(name: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {"providerID": f"aws:///us-west-2a/i-{name}"},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }


def nodeclaim(
    name: str,
    nodepool: str = "default",
    *,
    nodeclass: str = "default",
    requirements: list[dict[str, Any]] | None = None,
    labels: dict[str, str] | None = None,
    status: dict[str, Any] | None = None,
    **metadata: Any,
) -> dict[str, Any]:
    """A NodeClaim of ``nodepool`` (requirements default to amd64); ``metadata`` adds fields such as uid,
    finalizers or deletionTimestamp."""
    body: dict[str, Any] = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {"name": name, **metadata, "labels": {"karpenter.sh/nodepool": nodepool, **(labels or {})}},
        "spec": {
            "requirements": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]
            if requirements is None
            else requirements,
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": nodeclass},
        },
    }
    if status:
        body["status"] = status
    return body


def nodepool(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {
            "template": {
                "spec": {
                    "requirements": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}],
                    "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                }
            }
        },
    }


def nodeclass(name: str, role: str = "KarpenterNodeRole") -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": name},
        "spec": {
            "role": role,
            "amiSelectorTerms": [{"alias": "al2023@latest"}],
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
        },
    }


def pdb(
    name: str,
    selector: dict[str, str],
    *,
    min_available: int | str | None = None,
    max_unavailable: int | str | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"selector": {"matchLabels": selector}}
    if min_available is not None:
        spec["minAvailable"] = min_available
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def replicaset_controller_without_pod_create() -> dict[str, Any]:
    """The replicaset-controller's bootstrap ClusterRole replaced (an RBAC manifest of the same name) by one that may
    do everything it does except create pods."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "system:controller:replicaset-controller"},
        "rules": [
            {"apiGroups": ["apps"], "resources": ["replicasets"], "verbs": ["get", "list", "watch", "update"]},
            {"apiGroups": ["apps"], "resources": ["replicasets/status"], "verbs": ["update"]},
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "watch", "delete", "patch"]},
        ],
    }
