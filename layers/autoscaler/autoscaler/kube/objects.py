"""Typed, read-only views of the core objects the Cluster port returns as JSON (after kopf's bodies). Pure.

The port hands Nodes, Pods, DaemonSets, PodDisruptionBudgets and the rest over as the API server serves
them (``kube.port``): a ``Mapping[str, Any]``. A view wraps one such mapping, copies nothing, and answers the
questions every caller would otherwise spell out as ``(obj.get("metadata") or {}).get(...)``: absent parts
read as empty, never as an error. Wrapping is cheap (one lookup), so build a view where you read and keep
passing the mapping itself: writes, patches and the port still take the JSON.

    node = Node(raw)
    if node.ready and not node.deleting: ...
    cluster.delete(node.ref)

:class:`Body` is any object; :class:`Node` and :class:`Pod` add their kind's fields. Karpenter's own kinds
have pydantic models instead (``autoscaler.apis.v1``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from types import MappingProxyType
from typing import Any, ClassVar, Self

from autoscaler.apis.objectref import ObjectRef
from autoscaler.clock import parse_time

EMPTY: Mapping[str, Any] = MappingProxyType({})


def _map(part: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value: Mapping[str, Any] = part.get(key) or EMPTY
    return value


def _items(part: Mapping[str, Any], key: str) -> Sequence[Mapping[str, Any]]:
    value: Sequence[Mapping[str, Any]] = part.get(key) or ()
    return value


class Body:
    """Any Kubernetes object: its metadata, spec, status and conditions."""

    __slots__ = ("metadata", "raw", "spec", "status")
    KIND: ClassVar[str] = ""  # list items carry no ``kind``: a view of a known kind supplies it

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.raw = raw
        self.metadata: Mapping[str, Any] = raw.get("metadata") or EMPTY
        self.spec: Mapping[str, Any] = raw.get("spec") or EMPTY
        self.status: Mapping[str, Any] = raw.get("status") or EMPTY

    @classmethod
    def of(cls, obj: Mapping[str, Any] | Body) -> Self:
        """``obj`` itself when it is a view of this kind already, else a view of it: predicates that call one
        another take either, so that a caller looping over many objects wraps each one once."""
        if isinstance(obj, cls):
            return obj
        return cls(obj.raw if isinstance(obj, Body) else obj)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.kind}/{self.namespace + '/' if self.namespace else ''}{self.name})"

    # --- type and object meta ------------------------------------------------------------------------
    @property
    def kind(self) -> str:
        return self.KIND or str(self.raw.get("kind") or "")

    @property
    def name(self) -> str:
        return str(self.metadata.get("name") or "")

    @property
    def namespace(self) -> str:
        """Empty for cluster-scoped objects."""
        return str(self.metadata.get("namespace") or "")

    @property
    def uid(self) -> str | None:
        return str(self.metadata.get("uid") or "") or None

    @property
    def resource_version(self) -> str:
        return str(self.metadata.get("resourceVersion") or "")

    @property
    def labels(self) -> Mapping[str, str]:
        labels: Mapping[str, str] = self.metadata.get("labels") or EMPTY
        return labels

    @property
    def annotations(self) -> Mapping[str, str]:
        annotations: Mapping[str, str] = self.metadata.get("annotations") or EMPTY
        return annotations

    @property
    def finalizers(self) -> Sequence[str]:
        finalizers: Sequence[str] = self.metadata.get("finalizers") or ()
        return finalizers

    @property
    def owner_references(self) -> Sequence[Mapping[str, Any]]:
        return _items(self.metadata, "ownerReferences")

    def owned_by(self, kind: str) -> bool:
        return any(o.get("kind") == kind for o in self.owner_references)

    @property
    def creation_timestamp(self) -> str | None:
        """As written (RFC 3339 text sorts in time order)."""
        return self.metadata.get("creationTimestamp") or None

    @property
    def created_at(self) -> datetime | None:
        """None when absent or unreadable."""
        return parse_time(self.metadata.get("creationTimestamp"))

    @property
    def deletion_timestamp(self) -> str | None:
        """As written; set once a delete was accepted (the object stays while finalizers remain)."""
        return self.metadata.get("deletionTimestamp") or None

    @property
    def deleting(self) -> bool:
        return bool(self.metadata.get("deletionTimestamp"))

    @property
    def ref(self) -> ObjectRef:
        return ObjectRef(self.kind, self.name, self.namespace or None, self.uid)

    # --- spec and status -----------------------------------------------------------------------------
    @property
    def conditions(self) -> Sequence[Mapping[str, Any]]:
        return _items(self.status, "conditions")

    def condition(self, condition_type: str) -> Mapping[str, Any] | None:
        for condition in self.conditions:
            if condition.get("type") == condition_type:
                return condition
        return None

    def condition_is(self, condition_type: str, status: str = "True") -> bool:
        condition = self.condition(condition_type)
        return condition is not None and condition.get("status") == status


class Node(Body):
    """A core/v1 Node."""

    __slots__ = ()
    KIND = "Node"

    @property
    def provider_id(self) -> str:
        """``spec.providerID`` ("" until the cloud controller sets it)."""
        return str(self.spec.get("providerID") or "")

    @property
    def taints(self) -> Sequence[Mapping[str, Any]]:
        return _items(self.spec, "taints")

    def has_taint(self, key: str, effect: str) -> bool:
        """Taints are unique by key and effect (the value does not count)."""
        return any(t.get("key") == key and t.get("effect") == effect for t in self.taints)

    @property
    def unschedulable(self) -> bool:
        return bool(self.spec.get("unschedulable"))

    @property
    def ready(self) -> bool:
        """Its kubelet reports ``Ready=True``."""
        return self.condition_is("Ready")

    @property
    def capacity(self) -> Mapping[str, Any]:
        return _map(self.status, "capacity")

    @property
    def allocatable(self) -> Mapping[str, Any]:
        return _map(self.status, "allocatable")


class Pod(Body):
    """A core/v1 Pod."""

    __slots__ = ()
    KIND = "Pod"

    @property
    def node_name(self) -> str:
        """``spec.nodeName``: the node it is bound to ("" while unbound)."""
        return str(self.spec.get("nodeName") or "")

    @property
    def phase(self) -> str:
        return str(self.status.get("phase") or "")

    @property
    def terminal(self) -> bool:
        """Succeeded or Failed: it holds no resources any more."""
        return self.status.get("phase") in ("Succeeded", "Failed")

    @property
    def priority_class_name(self) -> str:
        return str(self.spec.get("priorityClassName") or "")

    @property
    def tolerations(self) -> Sequence[Mapping[str, Any]]:
        return _items(self.spec, "tolerations")

    @property
    def volumes(self) -> Sequence[Mapping[str, Any]]:
        return _items(self.spec, "volumes")
