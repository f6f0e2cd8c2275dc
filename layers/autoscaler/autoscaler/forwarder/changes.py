"""Which watch events become bus events, and what they say (``autoscaler.events``, docs/events.md). Pure.

A :class:`ChangeTracker` per kind remembers a small snapshot of every object it has seen, so that it
forwards changes that matter to a function (a pod became unschedulable, a NodeClaim started deleting, a
NodePool's spec changed) and drops the rest (status heartbeats, our own status writes, which would
otherwise loop back as triggers). After a relist it diffs the new list against what it knew, so nothing
that happened while the watch was down is lost.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from autoscaler.clock import utc_now
from autoscaler.events import SCHEMA_VERSION, WATCHED_KINDS, Change, ClusterEventDetail, ObjectReference
from autoscaler.kube.objects import Body, Pod
from autoscaler.kube.resources import KINDS, is_pending_unschedulable, is_terminal

KubeObject = dict[str, Any]
_LABELS = (
    "karpenter.sh/nodepool",
    "karpenter.k8s.aws/ec2nodeclass",
    "node.kubernetes.io/instance-type",
    "topology.kubernetes.io/zone",
    "karpenter.sh/capacity-type",
)


@dataclass(frozen=True)
class BusEvent:
    """One bus event: ``detail_type`` ("NodeClaim Deleting", "Pod Unschedulable", ...) and its ``detail`` (the
    wire form of ``events.ClusterEventDetail``)."""

    key: str  # kind/namespace/name: what the coalescer groups by
    detail_type: str
    detail: dict[str, Any] = field(hash=False, compare=False)
    time: datetime = field(compare=False)


@dataclass(frozen=True)
class _Snapshot:
    fingerprint: str
    deleting: bool
    pending: bool  # pods: pending and unschedulable
    node: str  # pods: the node they are bound to
    terminal: bool  # pods: Succeeded or Failed


def _significant(kind: str, obj: Mapping[str, Any]) -> Any:
    """The parts of an object whose change is worth an event ("Updated"); status is left out for NodePools
    and EC2NodeClasses because our own functions write it."""
    view = Body(obj)
    metadata, spec, status = view.metadata, view.spec, view.status
    conditions = sorted((c.get("type"), c.get("status"), c.get("reason")) for c in view.conditions)
    if kind == "Node":
        ready = [c for c in conditions if c[0] == "Ready"]
        return [metadata.get("labels"), spec.get("taints"), spec.get("unschedulable"), spec.get("providerID"), ready]
    if kind == "NodeClaim":
        owned = [metadata.get("labels"), metadata.get("annotations"), metadata.get("finalizers"), spec]
        return [*owned, conditions, status.get("nodeName"), status.get("providerID")]
    if kind in ("NodePool", "EC2NodeClass"):
        return [metadata.get("labels"), metadata.get("annotations"), spec]
    return None  # pods: only the transitions in ChangeTracker matter


def _snapshot(kind: str, obj: Mapping[str, Any]) -> _Snapshot:
    pod = kind == "Pod"
    return _Snapshot(
        fingerprint=json.dumps(_significant(kind, obj), sort_keys=True, default=str),
        deleting=Body(obj).deleting,
        pending=pod and is_pending_unschedulable(obj),
        node=Pod(obj).node_name if pod else "",
        terminal=pod and is_terminal(obj),
    )


def _key(kind: str, obj: Mapping[str, Any]) -> str:
    view = Body(obj)
    return f"{kind}/{view.namespace}/{view.name}"


class ChangeTracker:
    def __init__(self, kind: str, cluster: str, clock: Callable[[], datetime] = utc_now) -> None:
        if kind not in WATCHED_KINDS:
            raise ValueError(f"the forwarder does not watch {kind}")
        self.kind, self.cluster, self.clock = kind, cluster, clock
        self.known: dict[str, _Snapshot] = {}

    def _event(self, change: Change, obj: Mapping[str, Any], **extra: str | None) -> BusEvent:
        view = Body(obj)
        metadata, spec, status = view.metadata, view.spec, view.status
        labels = metadata.get("labels") or {}
        reference = ObjectReference(
            api_version=obj.get("apiVersion") or KINDS[self.kind].api_version,
            kind=self.kind,
            name=metadata.get("name") or "",  # the API server always names it; a watch payload might not
            namespace=metadata.get("namespace"),
            uid=metadata.get("uid"),
            resource_version=metadata.get("resourceVersion"),
            deletion_timestamp=metadata.get("deletionTimestamp"),
            labels={k: v for k, v in labels.items() if k in _LABELS} or None,
        )
        now = self.clock()
        fields: dict[str, Any] = {
            "node_name": spec.get("nodeName") or status.get("nodeName"),
            "provider_id": spec.get("providerID") or status.get("providerID"),
            "node_pool": labels.get("karpenter.sh/nodepool"),
            **extra,
        }
        detail = ClusterEventDetail(
            version=SCHEMA_VERSION, cluster=self.cluster, change=change, observed_at=now, object=reference, **fields
        )
        return BusEvent(_key(self.kind, obj), f"{self.kind} {change}", detail.wire(), now)

    def observe(self, watch_type: str, obj: Mapping[str, Any]) -> list[BusEvent]:
        """The bus events a watch event (ADDED, MODIFIED, DELETED) calls for."""
        key = _key(self.kind, obj)
        before = self.known.get(key)
        if watch_type == "DELETED":
            self.known.pop(key, None)
            return self._deleted(obj, before)
        after = self.known[key] = _snapshot(self.kind, obj)
        return self._changed(obj, before, after)

    def resync(self, objects: Iterable[Mapping[str, Any]], initial: bool) -> list[BusEvent]:
        """After a (re)list: diff against what was known. On the ``initial`` list only actionable states are
        forwarded (unschedulable pods, deletions in progress), not a "Created" for every existing object."""
        events: list[BusEvent] = []
        seen: dict[str, _Snapshot] = {}
        for obj in objects:
            key = _key(self.kind, obj)
            seen[key] = after = _snapshot(self.kind, obj)
            before = self.known.get(key)
            if initial and before is None:
                events += [e for e in self._changed(obj, None, after) if not e.detail_type.endswith("Created")]
            else:
                events += self._changed(obj, before, after)
        for key in set(self.known) - set(seen):
            _, namespace, name = key.split("/", 2)
            gone = {"metadata": {"name": name, **({"namespace": namespace} if namespace else {})}}
            events += self._deleted(gone, self.known[key])
        self.known = seen
        return events

    def _changed(self, obj: Mapping[str, Any], before: _Snapshot | None, after: _Snapshot) -> list[BusEvent]:
        if self.kind == "Pod":
            return self._pod_changed(obj, before, after)
        if before is None:
            return [self._event("Deleting" if after.deleting else "Created", obj)]
        if after.deleting and not before.deleting:
            return [self._event("Deleting", obj)]
        if after.fingerprint != before.fingerprint:
            return [self._event("Updated", obj)]
        return []

    def _pod_changed(self, obj: Mapping[str, Any], before: _Snapshot | None, after: _Snapshot) -> list[BusEvent]:
        if after.pending and (before is None or not before.pending):
            condition = Pod(obj).condition("PodScheduled") or {}
            return [self._event("Unschedulable", obj, message=condition.get("message") or None)]
        if after.terminal and after.node and (before is None or not before.terminal):
            return [self._event("Capacity Freed", obj, reason=Pod(obj).status.get("phase"))]
        return []

    def _deleted(self, obj: Mapping[str, Any], before: _Snapshot | None) -> list[BusEvent]:
        if self.kind != "Pod":
            return [self._event("Deleted", obj)]
        node = Pod(obj).node_name or (before.node if before else "")
        if node and not (before and before.terminal):  # a terminal pod freed its capacity already
            return [self._event("Capacity Freed", obj, reason="Deleted", node_name=node)]
        return []


class Coalescer:
    """One event per object and detail type per ``window`` seconds, the latest: an object's first change goes at
    the next flush (a pending pod waits for no window: the provisioner's pass batches whatever has arrived by
    then, as Karpenter's batcher does), and its further changes within the window are held and go as one when the
    window since the last send is over."""

    def __init__(self, window: float) -> None:
        self.window = window
        self._pending: dict[tuple[str, str], tuple[float, BusEvent]] = {}  # slot -> (due at, latest event)
        self._sent: dict[tuple[str, str], float] = {}  # slot -> when it last went, while within a window

    def add(self, events: Iterable[BusEvent], now: float) -> None:
        for event in events:
            slot = (event.key, event.detail_type)
            if slot in self._pending:
                due_at = self._pending[slot][0]
            else:
                last = self._sent.get(slot)
                due_at = now if last is None else max(now, last + self.window)
            self._pending[slot] = (due_at, event)

    def due(self, now: float, everything: bool = False) -> list[BusEvent]:
        ready = [slot for slot, (at, _) in self._pending.items() if everything or now >= at]
        self._sent = {slot: at for slot, at in self._sent.items() if now - at < self.window}
        self._sent.update(dict.fromkeys(ready, now))
        return [self._pending.pop(slot)[1] for slot in ready]

    def clear(self) -> None:
        self._pending.clear()
        self._sent.clear()

    def __len__(self) -> int:
        return len(self._pending)
