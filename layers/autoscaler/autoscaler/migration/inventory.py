"""Sort manifests for a migration: Karpenter objects (each as written and as v1) and everything else.

A v1beta1 object is converted to v1 with the NodePools of the same input at hand, so a NodeClaim takes
its NodePool's expireAfter as Karpenter v1.0's conversion would have looked it up.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from autoscaler.apis.conversion import SERVED_KINDS, V1BETA1_KINDS, ConversionError, convert
from autoscaler.apis.rules import ApiModel
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.nodepool import NodePool
from autoscaler.apis.validation import KINDS, InvalidObjectError, parse
from autoscaler.manifests import Document

# The version each kind is served at (v1, and v1alpha1 / v1beta1 for NodeOverlay / CapacityBuffer).
V1_VERSIONS = {kind: api_version for api_version, kind in KINDS}


@dataclass(frozen=True)
class KarpenterObject:
    """One NodePool, NodeClaim, EC2NodeClass, NodeOverlay or CapacityBuffer of the input."""

    origin: str
    raw: Mapping[str, Any]
    v1beta1: ApiModel | None  # the object as written, when written as v1beta1
    v1: ApiModel | None  # the object as v1 (converted when needed); None when it is invalid or does not convert
    error: str | None = None

    @property
    def kind(self) -> str:
        return str(self.raw.get("kind", ""))

    @property
    def name(self) -> str:
        metadata = self.raw.get("metadata")
        return str(metadata.get("name", "")) if isinstance(metadata, Mapping) else ""

    @property
    def subject(self) -> str:
        return f"{self.kind}/{self.name}"

    @property
    def converted(self) -> bool:
        return self.v1beta1 is not None


@dataclass
class Inventory:
    objects: list[KarpenterObject] = field(default_factory=list)
    others: list[Document] = field(default_factory=list)  # any other Kubernetes object (pods, workloads, nodes)
    unreadable: list[Document] = field(default_factory=list)  # documents that are not YAML objects

    def of_kind(self, kind: str) -> list[KarpenterObject]:
        return [o for o in self.objects if o.kind == kind]


def _is_karpenter(body: Mapping[str, Any]) -> bool:
    return (str(body.get("apiVersion")), str(body.get("kind"))) in SERVED_KINDS or str(
        body.get("apiVersion", "")
    ).startswith(("karpenter.sh/", "karpenter.k8s.aws/"))


def _expire_after_by_nodepool(documents: Iterable[Document]) -> dict[str, str]:
    known: dict[str, str] = {}
    for document in documents:
        body = document.body
        if not isinstance(body, Mapping) or body.get("kind") != "NodePool":
            continue
        try:
            nodepool = parse(convert(body, wk.API_VERSION))
        except (ConversionError, InvalidObjectError):
            continue
        if isinstance(nodepool, NodePool) and nodepool.metadata.name:
            known[nodepool.metadata.name] = nodepool.spec.template.spec.expire_after
    return known


def take_inventory(documents: Iterable[Document]) -> Inventory:
    documents = list(documents)
    expire_after = _expire_after_by_nodepool(documents)
    inventory = Inventory()
    for document in documents:
        body = document.body
        if document.error is not None or not isinstance(body, Mapping):
            inventory.unreadable.append(document)
        elif not _is_karpenter(body):
            inventory.others.append(document)
        else:
            inventory.objects.append(_classify(document.origin, body, expire_after))
    return inventory


def _classify(origin: str, body: Mapping[str, Any], expire_after: Mapping[str, str]) -> KarpenterObject:
    key = (str(body.get("apiVersion")), str(body.get("kind")))
    target = V1_VERSIONS.get(key[1])
    if target is None or key not in SERVED_KINDS:
        served = ", ".join(f"{k} ({v})" for v, k in SERVED_KINDS)
        return KarpenterObject(origin, body, None, None, f"not a kind this project converts: serving {served}")
    try:
        v1 = parse(convert(body, target, expire_after))
        source = parse(body, SERVED_KINDS) if key in V1BETA1_KINDS else None
    except ConversionError as error:
        return KarpenterObject(origin, body, None, None, str(error))
    return KarpenterObject(origin, body, source, v1)
