"""What a drain needs to know about one pod, read from its JSON as the API server serves it. Pure.

The predicates follow Karpenter's pod utilities: a pod the node must wait for is *drainable*; a pod the
drain may ask to leave through the Eviction API is *evictable* (a subset: do-not-disrupt pods are waited
for, but only the terminationGracePeriod deadline removes them).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import IntEnum
from typing import Any

from autoscaler.apis.v1 import labels as wk
from autoscaler.controllers.termination.deadline import required_time
from autoscaler.kube.objects import Pod

KubeObject = Mapping[str, Any]
AnyPod = KubeObject | Pod  # a pod as served, or a view of one: the drain wraps each pod once for all predicates

CRITICAL_PRIORITY_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})
# Kubernetes defaults terminationGracePeriodSeconds to 30 s; a pod served without it gets the same.
DEFAULT_POD_GRACE_PERIOD_SECONDS = 30
# A terminating pod still on the node this long after its deletionTimestamp (deletion time plus its grace
# period) is stuck: the kubelet is gone or wedged, and the drain stops waiting for it.
STUCK_TERMINATING_AFTER = timedelta(minutes=1)
MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"


@dataclass(frozen=True)
class PodRef:
    namespace: str
    name: str
    uid: str | None = None

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


class DrainGroup(IntEnum):
    """Eviction order on a terminating node, as in Kubernetes' graceful node shutdown: a group starts
    leaving only once every pod of the groups before it has left."""

    NON_CRITICAL = 0
    NON_CRITICAL_DAEMON = 1
    CRITICAL = 2
    CRITICAL_DAEMON = 3


def pod_ref(pod: AnyPod) -> PodRef:
    view = Pod.of(pod)
    return PodRef(view.namespace or "default", view.name, view.uid)


def _owned_by(pod: AnyPod, api_version: str, kind: str) -> bool:
    return any(o.get("apiVersion") == api_version and o.get("kind") == kind for o in Pod.of(pod).owner_references)


def is_owned_by_daemonset(pod: AnyPod) -> bool:
    return _owned_by(pod, "apps/v1", "DaemonSet")


def is_static(pod: AnyPod) -> bool:
    """Static (mirror) pods belong to the kubelet: the API server cannot remove them."""
    view = Pod.of(pod)
    return _owned_by(view, "v1", "Node") or MIRROR_POD_ANNOTATION in view.annotations


def is_critical(pod: AnyPod) -> bool:
    return Pod.of(pod).priority_class_name in CRITICAL_PRIORITY_CLASSES


def is_terminal(pod: AnyPod) -> bool:
    return Pod.of(pod).terminal


def is_terminating(pod: AnyPod) -> bool:
    return Pod.of(pod).deleting


def is_stuck_terminating(pod: AnyPod, now: datetime) -> bool:
    view = Pod.of(pod)
    deletion = view.deletion_timestamp
    if not deletion:
        return False
    deleted_at = required_time(str(deletion), f"Pod {view.namespace}/{view.name}: deletionTimestamp")
    return now - deleted_at > STUCK_TERMINATING_AFTER


def has_do_not_disrupt(pod: AnyPod) -> bool:
    return Pod.of(pod).annotations.get(wk.ANNOTATION_DO_NOT_DISRUPT) == "true"


def grace_period_seconds(pod: AnyPod) -> int:
    value = Pod.of(pod).spec.get("terminationGracePeriodSeconds")
    return DEFAULT_POD_GRACE_PERIOD_SECONDS if value is None else max(int(value), 0)


def _tolerates(toleration: Mapping[str, Any], key: str, value: str, effect: str) -> bool:
    # Kubernetes' Toleration.ToleratesTaint: an empty effect or key matches any; Exists ignores the value.
    if toleration.get("effect") and toleration["effect"] != effect:
        return False
    if toleration.get("key") and toleration["key"] != key:
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    return operator == "Equal" and (toleration.get("value") or "") == value


def tolerates_disrupted_taint(pod: AnyPod) -> bool:
    """Pods that tolerate ``karpenter.sh/disrupted:NoSchedule`` would come straight back: the drain leaves
    them alone (they go down with the node)."""
    return any(_tolerates(t, wk.TAINT_DISRUPTED, "", "NoSchedule") for t in Pod.of(pod).tolerations)


def is_drainable(pod: AnyPod, now: datetime) -> bool:
    """A pod the node waits for before it is terminated."""
    view = Pod.of(pod)
    return not tolerates_disrupted_taint(view) and not is_stuck_terminating(view, now) and not is_static(view)


def is_waiting_eviction(pod: AnyPod, now: datetime) -> bool:
    view = Pod.of(pod)
    return not is_terminal(view) and is_drainable(view, now)


def is_evictable(pod: AnyPod) -> bool:
    """A pod the drain may ask to leave through the Eviction API now."""
    view = Pod.of(pod)
    return (
        not is_terminal(view)
        and not is_terminating(view)
        and not tolerates_disrupted_taint(view)
        and not is_static(view)
        and not has_do_not_disrupt(view)
    )


def drain_group(pod: AnyPod) -> DrainGroup:
    view = Pod.of(pod)
    daemon = is_owned_by_daemonset(view)
    if is_critical(view):
        return DrainGroup.CRITICAL_DAEMON if daemon else DrainGroup.CRITICAL
    return DrainGroup.NON_CRITICAL_DAEMON if daemon else DrainGroup.NON_CRITICAL
