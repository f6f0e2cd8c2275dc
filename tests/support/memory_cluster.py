"""An in-memory Kubernetes API behind the Cluster port, for controller and handler tests.

Objects are kept as the API server keeps them, JSON (camelCase) by kind, and every read returns a copy:
Karpenter's kinds parsed into our models (objects the models reject are skipped, as the adapter skips them,
and still listed by ``list_raw``), core kinds as dicts. Writes behave as the API server's do where the
controllers depend on it:

- every write gives the object a new resourceVersion; a status write from a stale one conflicts (409);
- metadata patches merge labels and annotations (None removes a key), add or remove finalizers and set owner
  references; deleting an object with finalizers only sets its deletionTimestamp, and removing the last
  finalizer of an object being deleted deletes it;
- a deleted or evicted pod gets a deletionTimestamp (now + its grace period) and stays until the "kubelet" (the
  test, ``kubelet_removes_terminating_pods``) removes it; evictions honour PodDisruptionBudgets (matchLabels,
  integer minAvailable / maxUnavailable, the workload's scale in ``status.expectedPods``);
- ``create_nodeclaim`` honours generateName and gives the NodeClaim a uid and a creationTimestamp.

It records what the controllers did: ``calls`` (every port method, reads too), ``writes`` (each mutating
request, e.g. ``"evict default/web-1"`` or ``"patch NodeClaim/a -finalizer"``, with ``write_times``) and
``events``. ``fail(method, *errors)`` makes the next calls of a port method raise. Controllers that act in
parallel may share it: one call runs at a time, as the server serializes writes.
"""

from __future__ import annotations

import copy
import functools
import pickle
import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar, cast

from pydantic import ValidationError

from autoscaler.apis.v1.conditions import timestamp
from autoscaler.apis.v1.ec2nodeclass import EC2NodeClass
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.apis.v1.nodepool import NodePool
from autoscaler.kube.port import (
    ConflictError,
    Event,
    EvictionOutcome,
    KarpenterObject,
    KubeObject,
    NotFoundError,
    ObjectRef,
)
from autoscaler.kube.resources import is_pending_unschedulable, is_terminal

Clock = Callable[[], datetime]
Key = tuple[str, str]  # (namespace or "", name)
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
_MODELS: dict[str, Any] = {"NodePool": NodePool, "NodeClaim": NodeClaim, "EC2NodeClass": EC2NodeClass}
Method = TypeVar("Method", bound=Callable[..., Any])


def _port(method: Method) -> Method:
    """A port method: one at a time, counted in ``calls``, raising the errors ``fail`` queued for it."""

    @functools.wraps(method)
    def call(self: MemoryCluster, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            self.calls[method.__name__] += 1
            pending = self._failures.get(method.__name__)
            if pending:
                raise pending.pop(0)
            return method(self, *args, **kwargs)

    return call  # type: ignore[return-value]


def _copied(objects: list[KubeObject]) -> list[KubeObject]:
    """Deep copies of stored objects, as a list read decodes fresh ones: one pickle round trip, several times
    faster than ``copy.deepcopy`` object by object (which dominated reads of 10,000-pod clusters)."""
    return cast(list[KubeObject], pickle.loads(pickle.dumps(objects, pickle.HIGHEST_PROTOCOL)))


def _key(obj: Mapping[str, Any]) -> Key:
    metadata = obj["metadata"]
    return metadata.get("namespace") or "", metadata["name"]


class MemoryCluster:
    def __init__(self, *objects: NodePool | NodeClaim | EC2NodeClass | KubeObject, clock: Clock = lambda: EPOCH):
        self.clock = clock
        self.calls: Counter[str] = Counter()
        self.writes: list[str] = []
        self.write_times: list[datetime] = []  # when each of ``writes`` happened
        self.events: list[Event] = []
        self._kinds: dict[str, dict[Key, KubeObject]] = {}
        self._failures: dict[str, list[Exception]] = {}
        self._version = 0
        self._lock = threading.RLock()
        self.add(*objects)

    # --- the test's side: seeding, inspection, other actors ----------------------------------------------
    def add(self, *objects: NodePool | NodeClaim | EC2NodeClass | KubeObject) -> None:
        """Store each object (a model, or JSON with ``kind``) under a new resourceVersion, replacing any
        object of the same kind and name."""
        with self._lock:
            for obj in objects:
                data = obj.to_dict() if not isinstance(obj, dict) else copy.deepcopy(obj)
                self._touch(data)
                self._kinds.setdefault(data["kind"], {})[_key(data)] = data

    def stored(self, kind: str, name: str, namespace: str | None = None) -> KubeObject | None:
        """The object as stored (not a copy: a test may change it behind the controllers' back)."""
        return self._kinds.get(kind, {}).get((namespace or "", name))

    def names(self, kind: str) -> list[str]:
        return sorted(name for _, name in self._kinds.get(kind, {}))

    def remove(self, kind: str, name: str, namespace: str | None = None) -> None:
        """The object is gone, as if someone else deleted it (or a volume detached)."""
        self._kinds.get(kind, {}).pop((namespace or "", name), None)

    def fail(self, method: str, *errors: Exception) -> None:
        """The next calls of the port method ``method`` raise these errors, one each, then it works again."""
        self._failures.setdefault(method, []).extend(errors)

    def kubelet_removes_terminating_pods(self) -> list[str]:
        """What kubelets do once a pod's grace period is over: the terminating pods disappear."""
        pods = self._kinds.get("Pod", {})
        gone = [key for key, pod in pods.items() if pod["metadata"].get("deletionTimestamp")]
        for key in gone:
            del pods[key]
        return [name for _, name in gone]

    def healthy(self, budget: Mapping[str, Any]) -> int:
        """Pods the budget counts as available: selected, running and not terminating."""
        return sum(
            1
            for pod in self._kinds.get("Pod", {}).values()
            if _selects(budget, pod)
            and not pod["metadata"].get("deletionTimestamp")
            and (pod.get("status") or {}).get("phase") == "Running"
        )

    def written_at(self, prefix: str) -> list[datetime]:
        """When the writes starting with ``prefix`` happened."""
        return [t for w, t in zip(self.writes, self.write_times, strict=True) if w.startswith(prefix)]

    def events_for(self, kind: str, name: str) -> list[str]:
        """The reasons of the events recorded about one object, in order."""
        return [e.reason for e in self.events if e.regarding.kind == kind and e.regarding.name == name]

    # --- internals --------------------------------------------------------------------------------------
    def _touch(self, obj: KubeObject) -> None:
        self._version += 1
        obj.setdefault("metadata", {})["resourceVersion"] = str(self._version)

    def _record(self, write: str) -> None:
        self.writes.append(write)
        self.write_times.append(self.clock())

    def _find(self, kind: str, name: str, namespace: str | None = None) -> KubeObject | None:
        return self._kinds.get(kind, {}).get((namespace or "", name))

    def _require(self, kind: str, name: str, namespace: str | None = None) -> KubeObject:
        found = self._find(kind, name, namespace)
        if found is None:
            raise NotFoundError(f"{kind} {name} not found")
        return found

    def _list(self, kind: str, keep: Callable[[KubeObject], bool] = lambda _: True) -> list[KubeObject]:
        kept = sorted((key, o) for key, o in self._kinds.get(kind, {}).items() if keep(o))  # by namespace, name
        return _copied([o for _, o in kept])

    def _models(self, kind: str) -> list[Any]:
        parsed = []
        for data in self._list(kind):
            try:
                parsed.append(_MODELS[kind].model_validate(data))
            except ValidationError:
                continue  # the adapter skips (and logs) what our models reject
        return parsed

    def _model(self, kind: str, name: str) -> Any:
        data = self._find(kind, name)
        try:
            return _MODELS[kind].model_validate(copy.deepcopy(data)) if data else None
        except ValidationError:
            return None

    # --- the port: Karpenter's kinds -----------------------------------------------------------------
    @_port
    def nodepools(self) -> list[NodePool]:
        return self._models("NodePool")

    @_port
    def nodeclasses(self) -> list[EC2NodeClass]:
        return self._models("EC2NodeClass")

    @_port
    def nodeclaims(self) -> list[NodeClaim]:
        return self._models("NodeClaim")

    @_port
    def nodepool(self, name: str) -> NodePool | None:
        return self._model("NodePool", name)  # type: ignore[no-any-return]

    @_port
    def nodeclass(self, name: str) -> EC2NodeClass | None:
        return self._model("EC2NodeClass", name)  # type: ignore[no-any-return]

    @_port
    def nodeclaim(self, name: str) -> NodeClaim | None:
        return self._model("NodeClaim", name)  # type: ignore[no-any-return]

    @_port
    def create_nodeclaim(self, nodeclaim: NodeClaim) -> NodeClaim:
        data = nodeclaim.to_dict()
        metadata = data.setdefault("metadata", {})
        if not metadata.get("name"):  # generateName, as the API server honours it
            metadata["name"] = f"{metadata.get('generateName', '')}{self._version + 1:05d}"
        name = metadata["name"]
        self._record(f"create NodeClaim/{name}")
        if self._find("NodeClaim", name):
            raise ConflictError(f"NodeClaim {name} already exists")
        metadata.setdefault("uid", f"uid-{name}")
        metadata.setdefault("creationTimestamp", timestamp(self.clock()))
        self._touch(data)
        self._kinds.setdefault("NodeClaim", {})[_key(data)] = data
        return NodeClaim.model_validate(copy.deepcopy(data))

    @_port
    def write_status(self, obj: KarpenterObject) -> KarpenterObject:
        self._record(f"status {obj.kind}/{obj.name}")
        stored = self._require(obj.kind, obj.name, obj.metadata.namespace)
        sent = obj.metadata.resource_version
        if sent and sent != stored["metadata"].get("resourceVersion"):
            raise ConflictError(f"{obj.kind} {obj.name} changed since resourceVersion {sent}")
        stored["status"] = obj.to_dict().get("status") or {}
        self._touch(stored)
        return type(obj).model_validate(copy.deepcopy(stored))

    # --- the port: core kinds ----------------------------------------------------------------------------
    @_port
    def get(self, ref: ObjectRef) -> KubeObject | None:
        found = self._find(ref.kind, ref.name, ref.namespace)
        return copy.deepcopy(found) if found else None

    @_port
    def pending_pods(self) -> list[KubeObject]:
        return self._list("Pod", is_pending_unschedulable)

    @_port
    def pods(self, node_name: str | None = None) -> list[KubeObject]:
        def bound(pod: KubeObject) -> bool:
            on = (pod.get("spec") or {}).get("nodeName")
            return on == node_name if node_name is not None else bool(on) and not is_terminal(pod)

        return self._list("Pod", bound)

    @_port
    def nodes(self) -> list[KubeObject]:
        return self._list("Node")

    @_port
    def list_raw(self, kind: str) -> list[KubeObject]:
        return self._list(kind)

    @_port
    def daemonsets(self) -> list[KubeObject]:
        return self._list("DaemonSet")

    @_port
    def pod_disruption_budgets(self) -> list[KubeObject]:
        return self._list("PodDisruptionBudget")

    @_port
    def persistent_volume_claims(self) -> list[KubeObject]:
        return self._list("PersistentVolumeClaim")

    @_port
    def persistent_volumes(self) -> list[KubeObject]:
        return self._list("PersistentVolume")

    @_port
    def volume_attachments(self) -> list[KubeObject]:
        return self._list("VolumeAttachment")

    # --- the port: writes on any kind --------------------------------------------------------------------
    @_port
    def patch_metadata(
        self,
        ref: ObjectRef,
        *,
        labels: Mapping[str, str | None] | None = None,
        annotations: Mapping[str, str | None] | None = None,
        add_finalizers: Sequence[str] = (),
        remove_finalizers: Sequence[str] = (),
        owner_references: Sequence[Mapping[str, Any]] | None = None,
    ) -> None:
        self._record(f"patch {ref.kind}/{ref.name}" + (" -finalizer" if remove_finalizers else ""))
        stored = self._require(ref.kind, ref.name, ref.namespace)
        metadata = stored["metadata"]
        for field, changes in (("labels", labels), ("annotations", annotations)):
            if changes is not None:
                merged = {**(metadata.get(field) or {}), **changes}
                metadata[field] = {k: v for k, v in merged.items() if v is not None}
        finalizers = [f for f in metadata.get("finalizers") or () if f not in remove_finalizers]
        finalizers += [f for f in add_finalizers if f not in finalizers]
        metadata["finalizers"] = finalizers
        if owner_references is not None:
            metadata["ownerReferences"] = [dict(o) for o in owner_references]
        self._touch(stored)
        if metadata.get("deletionTimestamp") and not finalizers:
            self.remove(ref.kind, ref.name, ref.namespace)  # the last finalizer gone: the API server deletes it

    @_port
    def set_node_taints(self, node_name: str, taints: Sequence[Mapping[str, Any]]) -> None:
        self._record(f"taint Node/{node_name}")
        node = self._require("Node", node_name)
        node.setdefault("spec", {})["taints"] = [dict(t) for t in taints]
        self._touch(node)

    @_port
    def set_node_unschedulable(self, node_name: str, unschedulable: bool) -> None:
        self._record(f"{'cordon' if unschedulable else 'uncordon'} Node/{node_name}")
        node = self._require("Node", node_name)
        node.setdefault("spec", {})["unschedulable"] = unschedulable
        self._touch(node)

    @_port
    def cordon(self, node: KubeObject, taint: Mapping[str, Any]) -> KubeObject | None:
        name = node["metadata"]["name"]
        self._record(f"cordon Node/{name}")
        stored = self._find("Node", name)
        if stored is None:
            return None
        spec = stored.setdefault("spec", {})
        taints = spec.setdefault("taints", [])
        if not any(t.get("key") == taint["key"] and t.get("effect") == taint["effect"] for t in taints):
            taints.append(dict(taint))
        spec["unschedulable"] = True
        self._touch(stored)
        return copy.deepcopy(stored)

    @_port
    def evict(self, namespace: str, name: str) -> EvictionOutcome:
        self._record(f"evict {namespace}/{name}")
        target = self._find("Pod", name, namespace)
        if target is None:
            return EvictionOutcome.GONE
        for budget in self._kinds.get("PodDisruptionBudget", {}).values():
            selected = budget["metadata"].get("namespace") == namespace and _selects(budget, target)
            if selected and self._disruptions_allowed(budget) <= 0:
                return EvictionOutcome.BLOCKED
        self._terminate_pod(target, None)
        return EvictionOutcome.EVICTED

    @_port
    def delete(self, ref: ObjectRef, *, grace_period_seconds: int | None = None) -> bool:
        grace = f" grace={grace_period_seconds}" if ref.kind == "Pod" else ""
        self._record(f"delete {ref.kind}/{ref.name}{grace}")
        stored = self._find(ref.kind, ref.name, ref.namespace)
        if stored is None:
            return False
        if ref.kind == "Pod":
            self._terminate_pod(stored, grace_period_seconds)
        elif stored["metadata"].get("finalizers"):
            stored["metadata"].setdefault("deletionTimestamp", timestamp(self.clock()))
            self._touch(stored)
        else:
            self.remove(ref.kind, ref.name, ref.namespace)
        return True

    @_port
    def record_event(self, event: Event) -> None:
        self.events.append(event)

    def record_events(self, events: Sequence[Event]) -> None:
        for event in events:  # each counted as the server would count its create
            self.record_event(event)

    # --- pods and their budgets ---------------------------------------------------------------------------
    def _terminate_pod(self, pod: KubeObject, grace_period_seconds: int | None) -> None:
        spec_grace = (pod.get("spec") or {}).get("terminationGracePeriodSeconds", 30)
        grace = spec_grace if grace_period_seconds is None else grace_period_seconds
        pod["metadata"].setdefault("deletionTimestamp", timestamp(self.clock() + timedelta(seconds=grace)))
        pod["metadata"]["deletionGracePeriodSeconds"] = grace
        self._touch(pod)

    def _disruptions_allowed(self, budget: Mapping[str, Any]) -> int:
        healthy = self.healthy(budget)
        if "minAvailable" in budget["spec"]:
            return healthy - int(budget["spec"]["minAvailable"])
        return int(budget["spec"]["maxUnavailable"]) - (int(budget["status"]["expectedPods"]) - healthy)


def _selects(budget: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    wanted = budget["spec"]["selector"]["matchLabels"]
    labels = pod["metadata"].get("labels") or {}
    return all(labels.get(k) == v for k, v in wanted.items())
