"""Workload manifests as the pending pods their controllers would create. Pure.

For ``autoscaler plan``: a Pod stays as it is; a Deployment, ReplicaSet or StatefulSet becomes
``spec.replicas`` pods (default 1), a Job ``min(parallelism, completions)`` pods (default 1), each from its
pod template, named as their controllers name them and owned (by ``ownerReferences``) as they would be, so
that the scheduler treats them exactly as the real ones. Every pod is Pending and unschedulable, with a
stable UID derived from its namespace and name.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping
from typing import Any

WORKLOAD_KINDS = frozenset({"Pod", "Deployment", "ReplicaSet", "StatefulSet", "Job"})
# What else a scheduling pass reads about the cluster, when it comes as manifests.
CONTEXT_KINDS = frozenset(
    {
        "Node",
        "DaemonSet",
        "PersistentVolumeClaim",
        "PersistentVolume",
        "StorageClass",
        "Namespace",
        "PodDisruptionBudget",
    }
)
_UID_NAMESPACE = uuid.UUID("6f1c2c0e-4f5b-4a43-9d6e-8b0c1d2e3f40")
UNSCHEDULABLE = {
    "type": "PodScheduled",
    "status": "False",
    "reason": "Unschedulable",
    "message": "0/0 nodes are available",
}


class WorkloadError(ValueError):
    """A workload manifest that cannot be expanded into pods (the message says which and why)."""


def _uid(namespace: str, name: str) -> str:
    return str(uuid.uuid5(_UID_NAMESPACE, f"{namespace}/{name}"))


def _suffix(text: str, length: int = 5) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def _count(value: Any, default: int, what: str) -> int:
    if value is None:
        return default
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise WorkloadError(f"{what} must be a non-negative integer, got {value!r}")
    return value


def pending(pod: Mapping[str, Any]) -> dict[str, Any]:
    """``pod`` as the kube-scheduler leaves a pod it cannot place: Pending, unbound, PodScheduled=False."""
    metadata = dict(pod.get("metadata") or {})
    namespace = str(metadata.get("namespace") or "default")
    name = str(metadata.get("name") or "")
    if not name:
        raise WorkloadError("a Pod needs metadata.name")
    metadata.update(namespace=namespace, uid=metadata.get("uid") or _uid(namespace, name))
    spec = {k: v for k, v in dict(pod.get("spec") or {}).items() if k != "nodeName"}
    if not spec.get("containers"):
        raise WorkloadError(f"Pod {namespace}/{name} has no containers")
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": spec,
        "status": {"phase": "Pending", "conditions": [dict(UNSCHEDULABLE)]},
    }


def _from_template(
    template: Mapping[str, Any], namespace: str, name: str, owner: Mapping[str, Any], extra_labels: Mapping[str, str]
) -> dict[str, Any]:
    metadata = dict(template.get("metadata") or {})
    labels = {**(metadata.get("labels") or {}), **extra_labels}
    pod = {
        "metadata": {
            **metadata,
            "name": name,
            "namespace": namespace,
            "labels": labels,
            "ownerReferences": [dict(owner)],
        },
        "spec": template.get("spec") or {},
    }
    return pending(pod)


def expand(workload: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The pending pods ``workload`` stands for; WorkloadError when it is not a workload or is malformed."""
    kind = workload.get("kind")
    if kind not in WORKLOAD_KINDS:
        raise WorkloadError(f"not a workload kind: {kind!r} (expected one of {', '.join(sorted(WORKLOAD_KINDS))})")
    if kind == "Pod":
        return [pending(workload)]
    metadata = workload.get("metadata") or {}
    namespace, name = str(metadata.get("namespace") or "default"), str(metadata.get("name") or "")
    spec = workload.get("spec") or {}
    template = spec.get("template")
    if not name or not isinstance(template, Mapping) or not (template.get("spec") or {}).get("containers"):
        raise WorkloadError(f"{kind} {namespace}/{name} needs metadata.name and spec.template with containers")
    owner_uid = metadata.get("uid") or _uid(namespace, f"{kind}/{name}")
    api_version = str(workload.get("apiVersion") or ("batch/v1" if kind == "Job" else "apps/v1"))
    if kind == "Job":
        parallelism = _count(spec.get("parallelism"), 1, f"Job {name} spec.parallelism")
        completions = _count(spec.get("completions"), parallelism, f"Job {name} spec.completions")
        owner = {"apiVersion": api_version, "kind": "Job", "name": name, "uid": owner_uid, "controller": True}
        labels = {"batch.kubernetes.io/job-name": name, "job-name": name}
        return [
            _from_template(template, namespace, f"{name}-{_suffix(f'{name}/{i}')}", owner, labels)
            for i in range(min(parallelism, completions))
        ]
    replicas = _count(spec.get("replicas"), 1, f"{kind} {name} spec.replicas")
    if kind == "StatefulSet":
        owner = {"apiVersion": api_version, "kind": "StatefulSet", "name": name, "uid": owner_uid, "controller": True}
        return [
            _from_template(
                template, namespace, f"{name}-{i}", owner, {"statefulset.kubernetes.io/pod-name": f"{name}-{i}"}
            )
            for i in range(replicas)
        ]
    # A Deployment's pods belong to its ReplicaSet, named after the template's hash.
    template_hash = _suffix(repr(sorted((template.get("spec") or {}).items(), key=str)), 10)
    owner_name = f"{name}-{template_hash}" if kind == "Deployment" else name
    owner = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "name": owner_name,
        "uid": _uid(namespace, f"ReplicaSet/{owner_name}") if kind == "Deployment" else owner_uid,
        "controller": True,
    }
    labels = {"pod-template-hash": template_hash} if kind == "Deployment" else {}
    return [
        _from_template(template, namespace, f"{owner_name}-{_suffix(f'{owner_name}/{i}')}", owner, labels)
        for i in range(replicas)
    ]
