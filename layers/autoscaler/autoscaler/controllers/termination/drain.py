"""The drain planner: given a terminating node's pods and the time, what to do about them now. Pure.

One plan is one step of the drain; the executor applies it and a later invocation plans again from what
the cluster then shows, so nothing here remembers anything between steps.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from autoscaler.controllers.termination.pods import (
    AnyPod,
    DrainGroup,
    KubeObject,
    PodRef,
    drain_group,
    grace_period_seconds,
    is_drainable,
    is_evictable,
    is_terminating,
    is_waiting_eviction,
    pod_ref,
)
from autoscaler.kube.objects import Body, Pod


@dataclass(frozen=True)
class PodDeletion:
    """Delete ``pod`` with this grace period: the deadline came, so PDBs and do-not-disrupt no longer hold it."""

    pod: PodRef
    grace_period_seconds: int


@dataclass(frozen=True)
class DrainPlan:
    delete: tuple[PodDeletion, ...]
    evict: tuple[PodRef, ...]
    waiting: tuple[PodRef, ...]  # every pod the node still waits for, whatever its group
    group: DrainGroup | None  # the group leaving now; None once drained

    @property
    def drained(self) -> bool:
        return not self.waiting


def deletion_time(pod: AnyPod, deadline: datetime) -> datetime:
    """When the pod must be deleted so that its whole grace period ends by the node's deadline."""
    return deadline - timedelta(seconds=grace_period_seconds(pod))


def plan_drain(pods: Iterable[KubeObject], now: datetime, deadline: datetime | None = None) -> DrainPlan:
    """One drain step over a node's pods.

    - Pods that tolerate ``karpenter.sh/disrupted``, static pods, finished pods and pods stuck terminating are
      not waited for.
    - With a deadline, each waiting pod not yet terminating is deleted once ``now`` reaches the deadline minus
      its own grace period, with the time left to the deadline (at least 1 s, never a force delete) as grace.
    - Otherwise pods leave group by group (non-critical, non-critical daemon, critical, critical daemon): the
      evictable pods of the first group that still has a waiting pod are evicted; later groups wait for it.
    """
    waiting = [view for view in map(Pod, pods) if is_waiting_eviction(view, now)]
    refs = [pod_ref(pod) for pod in waiting]
    groups = [drain_group(pod) for pod in waiting]
    deletions: list[PodDeletion] = []
    if deadline is not None:
        for pod, ref in zip(waiting, refs, strict=True):
            if not is_terminating(pod) and now >= deletion_time(pod, deadline):
                remaining = int((deadline - now).total_seconds())
                deletions.append(PodDeletion(ref, max(remaining, 1)))
    deleted = {deletion.pod for deletion in deletions}
    group = min(groups, default=None)
    evict = tuple(
        ref
        for pod, ref, pod_group in zip(waiting, refs, groups, strict=True)
        if pod_group == group and ref not in deleted and is_evictable(pod)
    )
    return DrainPlan(tuple(deletions), evict, tuple(refs), group)


def _claim_names(view: Pod) -> Iterable[str]:
    """The PersistentVolumeClaims a pod mounts, including generic ephemeral volumes' claims."""
    for volume in view.volumes:
        claim = volume.get("persistentVolumeClaim")
        if claim and claim.get("claimName"):
            yield claim["claimName"]
        elif volume.get("ephemeral") is not None:
            yield f"{view.name}-{volume.get('name', '')}"


def blocking_volume_attachments(
    node_name: str,
    attachments: Iterable[Mapping[str, Any]],
    pods: Sequence[KubeObject],
    claims: Iterable[Mapping[str, Any]],
    now: datetime,
) -> list[str]:
    """Names of the VolumeAttachments on ``node_name`` that must detach before the instance goes, so that
    the drained pods' volumes can attach elsewhere. Volumes of pods the drain does not wait for (static,
    tolerating the disrupted taint, stuck terminating) are left out: they would never detach."""
    volume_of_claim = {(claim.namespace, claim.name): claim.spec.get("volumeName") for claim in map(Body, claims)}
    ignored_volumes = {
        volume_of_claim.get((pod_ref(pod).namespace, claim))
        for pod in map(Pod, pods)
        if not is_drainable(pod, now)
        for claim in _claim_names(pod)
    }
    blocking = []
    for attachment in map(Body, attachments):
        spec = attachment.spec
        volume = (spec.get("source") or {}).get("persistentVolumeName")
        if spec.get("nodeName") == node_name and volume and volume not in ignored_volumes:
            blocking.append(attachment.name)
    return blocking
