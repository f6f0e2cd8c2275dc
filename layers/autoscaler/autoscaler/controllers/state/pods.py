"""Pods as the controllers read them (JSON dicts): their scheduling refs, and which of them need a place
elsewhere when their node goes. Pure."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from autoscaler.apis.v1 import labels as wk
from autoscaler.kube.resources import is_daemonset_pod, is_static_pod, is_terminal
from autoscaler.scheduling import PodRef

KubeObject = Mapping[str, Any]


def pod_ref(pod: KubeObject) -> PodRef:
    metadata = pod.get("metadata") or {}
    namespace, name = str(metadata.get("namespace") or "default"), str(metadata.get("name") or "")
    return PodRef(namespace, name, str(metadata.get("uid") or f"{namespace}/{name}"))


def opts_out(pod: KubeObject) -> bool:
    """A pod that asks not to run on Karpenter's nodes (``karpenter.sh/nodepool DoesNotExist`` in its first
    required node affinity term): Karpenter leaves it alone, without an event."""
    affinity = ((pod.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {}
    terms = (affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or []
    first = terms[0] if terms else {}
    return any(
        e.get("key") == wk.LABEL_NODEPOOL and e.get("operator") == "DoesNotExist"
        for e in first.get("matchExpressions") or ()
    )


def is_reschedulable(pod: KubeObject) -> bool:
    """A pod that would need a place elsewhere if its node went: not a DaemonSet's or the node's own, not done."""
    return not (is_daemonset_pod(pod) or is_static_pod(pod) or is_terminal(pod))


def needs_a_new_place(pod: KubeObject) -> bool:
    """A reschedulable pod that is not already leaving (being deleted): the node's going moves it."""
    return is_reschedulable(pod) and not (pod.get("metadata") or {}).get("deletionTimestamp")


def pods_by_node(pods: Iterable[KubeObject]) -> dict[str, list[KubeObject]]:
    """Bound pods grouped by ``spec.nodeName``."""
    grouped: dict[str, list[KubeObject]] = {}
    for pod in pods:
        grouped.setdefault(str((pod.get("spec") or {}).get("nodeName") or ""), []).append(pod)
    return grouped
