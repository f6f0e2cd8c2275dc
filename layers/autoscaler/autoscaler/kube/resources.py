"""Where each kind lives in the Kubernetes REST API, and the pod predicates the port defines. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from autoscaler.kube.objects import Pod


@dataclass(frozen=True)
class Kind:
    """A kind's REST coordinates: ``/api/v1/...`` for the core group, ``/apis/<group>/<version>/...`` otherwise."""

    kind: str
    group: str
    version: str
    plural: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str | None = None, name: str | None = None, subresource: str | None = None) -> str:
        path = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            path += f"/namespaces/{quote(namespace, safe='')}"
        path += f"/{self.plural}"
        if name:
            path += f"/{quote(name, safe='')}"
        if subresource:
            path += f"/{subresource}"
        return path


KINDS: dict[str, Kind] = {
    k.kind: k
    for k in (
        Kind("Pod", "", "v1", "pods", True),
        Kind("Node", "", "v1", "nodes", False),
        Kind("Namespace", "", "v1", "namespaces", False),
        Kind("PersistentVolumeClaim", "", "v1", "persistentvolumeclaims", True),
        Kind("PersistentVolume", "", "v1", "persistentvolumes", False),
        Kind("DaemonSet", "apps", "v1", "daemonsets", True),
        Kind("PodDisruptionBudget", "policy", "v1", "poddisruptionbudgets", True),
        Kind("VolumeAttachment", "storage.k8s.io", "v1", "volumeattachments", False),
        Kind("StorageClass", "storage.k8s.io", "v1", "storageclasses", False),
        Kind("Event", "events.k8s.io", "v1", "events", True),
        Kind("Lease", "coordination.k8s.io", "v1", "leases", True),
        Kind("NodeClaim", "karpenter.sh", "v1", "nodeclaims", False),
        Kind("NodePool", "karpenter.sh", "v1", "nodepools", False),
        Kind("EC2NodeClass", "karpenter.k8s.aws", "v1", "ec2nodeclasses", False),
        Kind("NodeOverlay", "karpenter.sh", "v1alpha1", "nodeoverlays", False),
        # CapacityBuffers and what they refer to: a PodTemplate or a scalable workload.
        Kind("CapacityBuffer", "autoscaling.x-k8s.io", "v1beta1", "capacitybuffers", True),
        Kind("PodTemplate", "", "v1", "podtemplates", True),
        Kind("Deployment", "apps", "v1", "deployments", True),
        Kind("StatefulSet", "apps", "v1", "statefulsets", True),
        Kind("ReplicaSet", "apps", "v1", "replicasets", True),
    )
}


def kind_of(name: str) -> Kind:
    try:
        return KINDS[name]
    except KeyError:
        raise ValueError(f"unknown kind {name!r}: expected one of {', '.join(sorted(KINDS))}") from None


def is_daemonset_pod(pod: Mapping[str, Any] | Pod) -> bool:
    return any(o.get("kind") == "DaemonSet" and o.get("controller") for o in Pod.of(pod).owner_references)


def is_static_pod(pod: Mapping[str, Any] | Pod) -> bool:
    """A mirror of a kubelet's static pod: the kubelet, not the scheduler, places it."""
    view = Pod.of(pod)
    return "kubernetes.io/config.mirror" in view.annotations or view.owned_by("Node")


def is_pending_unschedulable(pod: Mapping[str, Any] | Pod) -> bool:
    """The port's definition of a pod to provision for: Pending, unbound, PodScheduled=False/Unschedulable,
    not a DaemonSet or static pod, not being deleted."""
    view = Pod.of(pod)
    if view.phase != "Pending" or view.node_name or view.deleting:
        return False
    scheduled = view.condition("PodScheduled")
    if scheduled is None or scheduled.get("status") != "False" or scheduled.get("reason") != "Unschedulable":
        return False
    return not is_daemonset_pod(view) and not is_static_pod(view)


def is_terminal(pod: Mapping[str, Any] | Pod) -> bool:
    return Pod.of(pod).terminal
