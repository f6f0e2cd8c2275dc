"""A small in-memory Kubernetes for the interruption controller's unit tests: the Cluster port's reads and
the writes the controller makes, with Kubernetes' semantics (finalizers hold a deleted object with a
deletionTimestamp, resourceVersion moves on every write), call counts, and injectable failures."""

from __future__ import annotations

import copy
import threading
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.apis.v1.nodepool import NodePool
from autoscaler.kube.port import Event, KubeObject, ObjectRef
from autoscaler.simulation.interruptions import provider_id

DELETED_AT = "2026-03-02T14:05:02Z"


def make_nodeclaim(
    name: str,
    instance_id: str | None,
    *,
    zone: str = "us-west-2a",
    instance_type: str = "m5.large",
    capacity_type: str = "spot",
    nodepool: str = "default",
    node_name: str | None = None,
    annotations: Mapping[str, str] | None = None,
) -> NodeClaim:
    return NodeClaim.model_validate(
        {
            "metadata": {
                "name": name,
                "uid": f"uid-{name}",
                "labels": {
                    wk.LABEL_NODEPOOL: nodepool,
                    wk.LABEL_ZONE: zone,
                    wk.LABEL_INSTANCE_TYPE: instance_type,
                    wk.LABEL_CAPACITY_TYPE: capacity_type,
                },
                "annotations": dict(annotations or {}),
                "finalizers": [wk.FINALIZER_TERMINATION],
            },
            "spec": {
                "requirements": [{"key": wk.LABEL_CAPACITY_TYPE, "operator": "In", "values": [capacity_type]}],
                "nodeClassRef": {"group": wk.AWS_GROUP, "kind": "EC2NodeClass", "name": "default"},
            },
            "status": {"providerID": provider_id(instance_id, zone), "nodeName": node_name} if instance_id else {},
        }
    )


def make_node(
    name: str, instance_id: str, *, zone: str = "us-west-2a", taints: Sequence[Mapping[str, str]] = ()
) -> KubeObject:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": "1", "labels": {wk.LABEL_ZONE: zone}},
        "spec": {"providerID": provider_id(instance_id, zone), "taints": [dict(t) for t in taints]},
    }


def make_nodepool(name: str, annotations: Mapping[str, str] | None = None) -> NodePool:
    return NodePool.model_validate(
        {
            "metadata": {"name": name, "annotations": dict(annotations or {})},
            "spec": {
                "template": {
                    "spec": {
                        "requirements": [{"key": wk.LABEL_CAPACITY_TYPE, "operator": "In", "values": ["spot"]}],
                        "nodeClassRef": {"group": wk.AWS_GROUP, "kind": "EC2NodeClass", "name": "default"},
                    }
                }
            },
        }
    )


class InMemoryCluster:
    def __init__(self) -> None:
        self.nodeclaim_objects: dict[str, NodeClaim] = {}
        self.node_objects: dict[str, KubeObject] = {}
        self.nodepool_objects: dict[str, NodePool] = {}
        self.events: list[Event] = []
        self.calls: Counter[str] = Counter()
        self.log: list[str] = []  # "method name", in the order the calls were made
        self.failures: dict[str, list[Exception]] = {}
        self._lock = threading.RLock()

    # --- test set-up ------------------------------------------------------------------------------
    def add(self, *objects: NodeClaim | NodePool | KubeObject) -> None:
        for obj in objects:
            if isinstance(obj, NodeClaim):
                self.nodeclaim_objects[obj.name] = obj
            elif isinstance(obj, NodePool):
                self.nodepool_objects[obj.name] = obj
            else:
                self.node_objects[obj["metadata"]["name"]] = obj

    def fail(self, method: str, *errors: Exception) -> None:
        """The next calls of ``method`` raise these errors, one each, before succeeding again."""
        self.failures.setdefault(method, []).extend(errors)

    def _call(self, method: str, name: str = "") -> None:
        self.calls[method] += 1
        self.log.append(f"{method} {name}".strip())
        pending = self.failures.get(method)
        if pending:
            raise pending.pop(0)

    def events_for(self, kind: str, name: str) -> list[str]:
        return [e.reason for e in self.events if e.regarding.kind == kind and e.regarding.name == name]

    @property
    def writes(self) -> int:
        return sum(
            n for method, n in self.calls.items() if method in {"cordon", "delete", "patch_metadata", "record_event"}
        )

    # --- the port ---------------------------------------------------------------------------------
    def nodeclaims(self) -> list[NodeClaim]:
        with self._lock:
            self._call("nodeclaims")
            return [nc.model_copy(deep=True) for nc in self.nodeclaim_objects.values()]

    def nodes(self) -> list[KubeObject]:
        with self._lock:
            self._call("nodes")
            return copy.deepcopy(list(self.node_objects.values()))

    def nodepools(self) -> list[NodePool]:
        with self._lock:
            self._call("nodepools")
            return [np.model_copy(deep=True) for np in self.nodepool_objects.values()]

    def cordon(self, node: KubeObject, taint: Mapping[str, Any]) -> KubeObject | None:
        with self._lock:
            self._call("cordon", node["metadata"]["name"])
            stored = self.node_objects.get(node["metadata"]["name"])
            if stored is None:
                return None
            spec = stored.setdefault("spec", {})
            taints = spec.setdefault("taints", [])
            if not any(t.get("key") == taint["key"] and t.get("effect") == taint["effect"] for t in taints):
                taints.append(dict(taint))
            spec["unschedulable"] = True
            stored["metadata"]["resourceVersion"] = str(int(stored["metadata"]["resourceVersion"]) + 1)
            return copy.deepcopy(stored)

    def delete(self, ref: ObjectRef, *, grace_period_seconds: int | None = None) -> bool:
        with self._lock:
            self._call("delete", ref.name)
            assert ref.kind == "NodeClaim", ref
            nodeclaim = self.nodeclaim_objects.get(ref.name)
            if nodeclaim is None:
                return False
            if nodeclaim.metadata.finalizers:
                nodeclaim.metadata.deletion_timestamp = nodeclaim.metadata.deletion_timestamp or DELETED_AT
            else:
                del self.nodeclaim_objects[ref.name]
            return True

    def patch_metadata(self, ref: ObjectRef, *, annotations: Mapping[str, str | None] | None = None, **_: Any) -> None:
        with self._lock:
            self._call("patch_metadata")
            nodeclaim = self.nodeclaim_objects[ref.name]
            merged = {**(nodeclaim.metadata.annotations or {}), **(annotations or {})}
            nodeclaim.metadata.annotations = {k: v for k, v in merged.items() if v is not None}

    def record_event(self, event: Event) -> None:
        with self._lock:
            self.calls["record_event"] += 1
            self.events.append(event)
