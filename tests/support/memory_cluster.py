"""An in-memory stand-in for the Kubernetes side of the Cluster port, for controller tests.

It keeps Karpenter's objects as models and applies writes as the API server would for the parts the
controllers use: every write gives a new resourceVersion and a status write from a stale one conflicts (409),
metadata patches merge labels and annotations (None removes) and add or remove finalizers, deleting an object
with finalizers only sets its deletionTimestamp. Core objects (Nodes, ...) are JSON dicts added with
``put_object``; ``list_raw(kind)`` also returns the JSON of objects our models would reject, added the same
way. Unsupported writes raise NotImplementedError.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

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

_KINDS = {"NodePool": NodePool, "NodeClaim": NodeClaim, "EC2NodeClass": EC2NodeClass}


class MemoryCluster:
    def __init__(self, *objects: NodePool | NodeClaim | EC2NodeClass) -> None:
        self.objects: dict[tuple[str, str], Any] = {}
        self.raw: dict[tuple[str, str], dict[str, Any]] = {}  # core objects, and Karpenter objects we cannot parse
        self.events: list[Event] = []
        self.writes: list[tuple[str, str, str]] = []  # (verb, kind, name), in order
        self._version = 0
        for obj in objects:
            self.put(obj)

    def put(self, obj: NodePool | NodeClaim | EC2NodeClass) -> None:
        """Store ``obj`` with a new resourceVersion, as every write does on an API server."""
        self._version += 1
        meta = obj.metadata.model_copy(update={"resource_version": str(self._version)})
        self.objects[(obj.kind, obj.name)] = obj.model_copy(update={"metadata": meta})

    def put_object(self, obj: dict[str, Any]) -> None:
        self.raw[(obj["kind"], obj["metadata"]["name"])] = obj

    def get(self, kind: str, name: str) -> Any:
        try:
            return self.objects[(kind, name)]
        except KeyError:
            raise NotFoundError(f"{kind} {name} not found") from None

    def _of(self, kind: str) -> list[Any]:
        return [o for (k, _), o in sorted(self.objects.items()) if k == kind]

    def nodepools(self) -> list[NodePool]:
        return self._of("NodePool")

    def nodeclasses(self) -> list[EC2NodeClass]:
        return self._of("EC2NodeClass")

    def nodeclaims(self) -> list[NodeClaim]:
        return self._of("NodeClaim")

    def nodepool(self, name: str) -> NodePool | None:
        return self.objects.get(("NodePool", name))  # type: ignore[no-any-return]

    def nodeclass(self, name: str) -> EC2NodeClass | None:
        return self.objects.get(("EC2NodeClass", name))  # type: ignore[no-any-return]

    def nodeclaim(self, name: str) -> NodeClaim | None:
        return self.objects.get(("NodeClaim", name))  # type: ignore[no-any-return]

    def create_nodeclaim(self, nodeclaim: NodeClaim) -> NodeClaim:
        self.put(nodeclaim)
        return nodeclaim

    def write_status(self, obj: KarpenterObject) -> KarpenterObject:
        current = self.get(obj.kind, obj.name)
        version = obj.metadata.resource_version
        if version and version != current.metadata.resource_version:
            raise ConflictError(f"{obj.kind} {obj.name} changed since resourceVersion {version}")
        stored = current.model_copy(update={"status": obj.status})
        self.put(stored)
        self.writes.append(("status", obj.kind, obj.name))
        return stored  # type: ignore[no-any-return]

    def pending_pods(self) -> list[KubeObject]:
        return []

    def pods(self, node_name: str | None = None) -> list[KubeObject]:
        return []

    def nodes(self) -> list[KubeObject]:
        return self.list_raw("Node")

    def list_raw(self, kind: str) -> list[KubeObject]:
        models = [o.to_dict() for o in self._of(kind)] if kind in _KINDS else []
        return models + [o for (k, _), o in sorted(self.raw.items()) if k == kind]

    def daemonsets(self) -> list[KubeObject]:
        return []

    def pod_disruption_budgets(self) -> list[KubeObject]:
        return []

    def persistent_volume_claims(self) -> list[KubeObject]:
        return []

    def persistent_volumes(self) -> list[KubeObject]:
        return []

    def volume_attachments(self) -> list[KubeObject]:
        return []

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
        obj = self.get(ref.kind, ref.name)
        meta = obj.metadata

        def merged(current: dict[str, str] | None, changes: Mapping[str, str | None] | None) -> dict[str, str] | None:
            if changes is None:
                return current
            result = dict(current or {})
            for key, value in changes.items():
                if value is None:
                    result.pop(key, None)
                else:
                    result[key] = value
            return result

        finalizers = [f for f in (meta.finalizers or []) if f not in remove_finalizers]
        finalizers += [f for f in add_finalizers if f not in finalizers]
        update = {
            "labels": merged(meta.labels, labels),
            "annotations": merged(meta.annotations, annotations),
            "finalizers": finalizers or None,
        }
        self.put(obj.model_copy(update={"metadata": meta.model_copy(update=update)}))
        self.writes.append(("patch", ref.kind, ref.name))
        if meta.deletion_timestamp and not finalizers:
            del self.objects[(ref.kind, ref.name)]  # the last finalizer gone: the API server deletes it

    def set_node_taints(self, node_name: str, taints: Sequence[Mapping[str, Any]]) -> None:
        raise NotImplementedError

    def set_node_unschedulable(self, node_name: str, unschedulable: bool) -> None:
        raise NotImplementedError

    def evict(self, namespace: str, name: str) -> EvictionOutcome:
        raise NotImplementedError

    def delete(self, ref: ObjectRef, *, grace_period_seconds: int | None = None) -> bool:
        self.writes.append(("delete", ref.kind, ref.name))
        if (ref.kind, ref.name) in self.raw:
            del self.raw[(ref.kind, ref.name)]
            return True
        obj = self.objects.get((ref.kind, ref.name))
        if obj is None:
            return False
        if obj.metadata.finalizers:
            meta = obj.metadata.model_copy(update={"deletion_timestamp": "2026-01-01T00:00:00Z"})
            self.put(obj.model_copy(update={"metadata": meta}))
        else:
            del self.objects[(ref.kind, ref.name)]
        return True

    def record_event(self, event: Event) -> None:
        self.events.append(event)
