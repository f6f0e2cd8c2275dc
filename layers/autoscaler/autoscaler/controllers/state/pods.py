"""Pods as the controllers read them (JSON dicts, or ``kube.objects.Pod`` views of them): their scheduling refs,
and which of them need a place elsewhere when their node goes. Pure."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from autoscaler.apis.v1 import labels as wk
from autoscaler.kube.objects import Pod
from autoscaler.kube.resources import is_daemonset_pod, is_static_pod, is_terminal
from autoscaler.scheduling import PodRef

KubeObject = Mapping[str, Any]
AnyPod = KubeObject | Pod  # predicates that call one another take either, so that each pod is wrapped once


def pod_ref(pod: AnyPod) -> PodRef:
    view = Pod.of(pod)
    namespace, name = view.namespace or "default", view.name
    return PodRef(namespace, name, view.uid or f"{namespace}/{name}")


def opts_out(pod: AnyPod) -> bool:
    """A pod that asks not to run on Karpenter's nodes (``karpenter.sh/nodepool DoesNotExist`` in its first
    required node affinity term): Karpenter leaves it alone, without an event."""
    affinity = (Pod.of(pod).spec.get("affinity") or {}).get("nodeAffinity") or {}
    terms = (affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or []
    first = terms[0] if terms else {}
    return any(
        e.get("key") == wk.LABEL_NODEPOOL and e.get("operator") == "DoesNotExist"
        for e in first.get("matchExpressions") or ()
    )


def is_reschedulable(pod: AnyPod) -> bool:
    """A pod that would need a place elsewhere if its node went: not a DaemonSet's or the node's own, not done."""
    view = Pod.of(pod)
    return not (is_daemonset_pod(view) or is_static_pod(view) or is_terminal(view))


def needs_a_new_place(pod: AnyPod) -> bool:
    """A reschedulable pod that is not already leaving (being deleted): the node's going moves it."""
    view = Pod.of(pod)
    return is_reschedulable(view) and not view.deleting


def pods_by_node(pods: Iterable[KubeObject]) -> dict[str, list[KubeObject]]:
    """Bound pods grouped by ``spec.nodeName``."""
    grouped: dict[str, list[KubeObject]] = {}
    for pod in pods:
        grouped.setdefault(Pod(pod).node_name, []).append(pod)
    return grouped
