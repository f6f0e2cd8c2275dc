"""Objects for the termination tests, as the API server serves them (the doubles are in tests/support)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.nodeclaim import NodeClaim
from tests.support import kube as k8s


def pod(
    name: str,
    node: str = "node-a",
    *,
    namespace: str = "default",
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    daemon: bool = False,
    critical: bool = False,
    static: bool = False,
    grace: int | None = 30,
    tolerations: Sequence[Mapping[str, str]] = (),
    volumes: Sequence[Mapping[str, Any]] = (),
    phase: str = "Running",
    deletion: str | None = None,
) -> dict[str, Any]:
    owners = []
    if daemon:
        owners.append({"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "ds", "uid": "ds-uid"})
    elif static:
        owners.append({"apiVersion": "v1", "kind": "Node", "name": node, "uid": "node-uid"})
    else:
        owners.append({"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "rs-uid"})
    spec: dict[str, Any] = {"nodeName": node, "tolerations": list(tolerations), "volumes": list(volumes)}
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    if critical:
        spec["priorityClassName"] = "system-node-critical"
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": f"uid-{name}",
        "labels": dict(labels or {}),
        "annotations": dict(annotations or {}),
        "ownerReferences": owners,
    }
    if deletion:
        metadata["deletionTimestamp"] = deletion
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, "status": {"phase": phase}}


def node(
    name: str = "node-a",
    provider_id: str = "aws:///us-east-1a/i-a",
    *,
    ready: bool = True,
    finalizers: Sequence[str] = (wk.FINALIZER_TERMINATION,),
    nodepool: str = "default",
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": f"uid-{name}",
            "labels": {wk.LABEL_NODEPOOL: nodepool},
            "finalizers": list(finalizers),
        },
        "spec": {"providerID": provider_id},
        "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def nodeclaim(
    name: str = "default-a",
    provider_id: str | None = "aws:///us-east-1a/i-a",
    *,
    node_name: str | None = "node-a",
    grace: str | None = None,
    nodepool: str = "default",
) -> NodeClaim:
    body = k8s.nodeclaim(
        name,
        nodepool,
        requirements=[],
        labels={wk.LABEL_CAPACITY_TYPE: "on-demand"},
        status={"providerID": provider_id, "nodeName": node_name} if provider_id else None,
        uid=f"uid-{name}",
        finalizers=[wk.FINALIZER_TERMINATION],
    )
    if grace:
        body["spec"]["terminationGracePeriod"] = grace
    return NodeClaim.model_validate(body)


def pdb(
    name: str,
    match_labels: Mapping[str, str],
    *,
    expected: int,
    max_unavailable: int | None = None,
    min_available: int | None = None,
    namespace: str = "default",
) -> dict[str, Any]:
    """A PodDisruptionBudget over a workload of ``expected`` replicas (its controller's scale)."""
    budget = k8s.pdb(name, dict(match_labels), min_available=min_available, max_unavailable=max_unavailable)
    budget["metadata"]["namespace"] = namespace
    return {**budget, "status": {"expectedPods": expected}}
