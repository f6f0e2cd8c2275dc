"""The resource types the emulator serves (core kinds and CRDs) and the discovery documents describing them."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from autoscaler.crds.generate import CRD_KINDS, crd_manifest

Obj = dict[str, Any]  # a Kubernetes object as JSON

# Field selectors every resource supports; each type adds its own (as the API server registers them).
_META_FIELDS = frozenset({"metadata.name", "metadata.namespace"})
_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


@dataclass(frozen=True)
class ResourceType:
    """One served resource: how it is addressed, what it supports and how ``kubectl get`` prints it."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    subresources: tuple[str, ...] = ()
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    field_labels: frozenset[str] = _META_FIELDS
    printer_columns: tuple[Mapping[str, Any], ...] | None = None  # a CRD's additionalPrinterColumns
    custom: bool = False  # served from a CustomResourceDefinition
    schema: Mapping[str, Any] | None = field(default=None, compare=False, hash=False)  # a CRD's openAPIV3Schema
    scale: Mapping[str, str] | None = field(default=None, compare=False, hash=False)  # a CRD's scale subresource

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def key(self) -> str:
        """``plural.group`` (``pods`` for the core group): how the store and error messages name it."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources


def _core(plural: str, kind: str, namespaced: bool = True, **extra: Any) -> ResourceType:
    return ResourceType("", "v1", plural, kind, namespaced, **extra)


BUILTIN = (
    _core("namespaces", "Namespace", False, subresources=("status",), short_names=("ns",)),
    _core(
        "pods",
        "Pod",
        subresources=("status", "eviction", "binding"),
        short_names=("po",),
        categories=("all",),
        field_labels=_META_FIELDS
        | {
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        },
    ),
    _core(
        "nodes",
        "Node",
        False,
        subresources=("status",),
        short_names=("no",),
        field_labels=_META_FIELDS | {"spec.unschedulable"},
    ),
    _core(
        "events",
        "Event",
        short_names=("ev",),
        field_labels=_META_FIELDS
        | {
            "involvedObject.kind",
            "involvedObject.name",
            "involvedObject.namespace",
            "involvedObject.uid",
            "reason",
            "type",
            "source",
        },
    ),
    _core("persistentvolumeclaims", "PersistentVolumeClaim", subresources=("status",), short_names=("pvc",)),
    _core("persistentvolumes", "PersistentVolume", False, subresources=("status",), short_names=("pv",)),
    _core("services", "Service", subresources=("status",), short_names=("svc",), categories=("all",)),
    _core("configmaps", "ConfigMap", short_names=("cm",)),
    _core("podtemplates", "PodTemplate"),
    _core("serviceaccounts", "ServiceAccount", short_names=("sa",)),
    ResourceType("apps", "v1", "daemonsets", "DaemonSet", True, ("status",), ("ds",), ("all",)),
    ResourceType("apps", "v1", "deployments", "Deployment", True, ("status", "scale"), ("deploy",), ("all",)),
    ResourceType("apps", "v1", "replicasets", "ReplicaSet", True, ("status", "scale"), ("rs",), ("all",)),
    ResourceType("apps", "v1", "statefulsets", "StatefulSet", True, ("status", "scale"), ("sts",), ("all",)),
    ResourceType("batch", "v1", "jobs", "Job", True, ("status",), (), ("all",)),
    ResourceType("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True, ("status",), ("pdb",)),
    ResourceType(
        "events.k8s.io",
        "v1",
        "events",
        "Event",
        True,
        short_names=("ev",),
        field_labels=_META_FIELDS | {"regarding.kind", "regarding.name", "regarding.namespace", "reason", "type"},
    ),
    ResourceType("coordination.k8s.io", "v1", "leases", "Lease", True),
    # RBAC served as objects: the gate's authorizer follows what is applied here (``authorization.Authorizer``).
    ResourceType("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False),
    ResourceType("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False),
    ResourceType("rbac.authorization.k8s.io", "v1", "roles", "Role", True),
    ResourceType("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True),
    ResourceType("storage.k8s.io", "v1", "volumeattachments", "VolumeAttachment", False, ("status",)),
    ResourceType("storage.k8s.io", "v1", "storageclasses", "StorageClass", False, short_names=("sc",)),
    ResourceType(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        False,
        ("status",),
        ("crd", "crds"),
    ),
)


def resource_from_crd(crd: Mapping[str, Any]) -> list[ResourceType]:
    """The served versions of a CustomResourceDefinition (apiextensions.k8s.io/v1) as resource types."""
    spec, names = crd["spec"], crd["spec"]["names"]
    types = []
    for version in spec["versions"]:
        if not version.get("served", True):
            continue
        extra = {str(f["jsonPath"]).lstrip(".") for f in version.get("selectableFields", [])}
        types.append(
            ResourceType(
                group=spec["group"],
                version=version["name"],
                plural=names["plural"],
                kind=names["kind"],
                namespaced=spec.get("scope", "Namespaced") == "Namespaced",
                subresources=tuple(version.get("subresources") or {}),
                short_names=tuple(names.get("shortNames", ())),
                categories=tuple(names.get("categories", ())),
                field_labels=_META_FIELDS | extra,
                printer_columns=tuple(version.get("additionalPrinterColumns", ())),
                custom=True,
                schema=(version.get("schema") or {}).get("openAPIV3Schema"),
                scale=(version.get("subresources") or {}).get("scale"),
            )
        )
    return types


def our_crds() -> list[dict[str, Any]]:
    """Karpenter's CRDs as this project generates them (identical to infra/manifests/crds)."""
    return [crd_manifest(crd) for crd in CRD_KINDS]


@dataclass
class Registry:
    """Every served resource type, addressable by (group, version, plural); safe to extend while serving."""

    _types: dict[tuple[str, str, str], ResourceType] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def default(cls) -> Registry:
        registry = cls()
        registry.add(BUILTIN)
        for crd in our_crds():
            registry.add(resource_from_crd(crd))
        return registry

    def add(self, types: Iterable[ResourceType]) -> None:
        with self._lock:
            for resource in types:
                self._types[(resource.group, resource.version, resource.plural)] = resource

    def get(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._types.get((group, version, plural))

    def by_kind(self, api_version: str, kind: str) -> ResourceType | None:
        return next((t for t in self._types.values() if t.api_version == api_version and t.kind == kind), None)

    def all(self) -> list[ResourceType]:
        return list(self._types.values())

    # --- discovery documents ---------------------------------------------------------------------
    def group_versions(self) -> dict[str, list[str]]:
        groups: dict[str, list[str]] = {}
        for resource in self.all():
            versions = groups.setdefault(resource.group, [])
            if resource.version not in versions:
                versions.append(resource.version)
        return groups

    def api_group(self, group: str) -> dict[str, Any] | None:
        versions = self.group_versions().get(group)
        if not versions or not group:
            return None
        entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        return {
            "kind": "APIGroup",
            "apiVersion": "v1",
            "name": group,
            "versions": entries,
            "preferredVersion": entries[0],
        }

    def api_group_list(self) -> dict[str, Any]:
        groups = [self.api_group(g) for g in self.group_versions() if g]
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [g for g in groups if g]}

    def api_resource_list(self, group: str, version: str) -> dict[str, Any] | None:
        served = [r for r in self.all() if r.group == group and r.version == version]
        if not served:
            return None
        resources: list[dict[str, Any]] = []
        for r in served:
            resources.append(
                {
                    "name": r.plural,
                    "singularName": r.singular,
                    "namespaced": r.namespaced,
                    "kind": r.kind,
                    "verbs": _VERBS,
                    "shortNames": list(r.short_names),
                    "categories": list(r.categories),
                }
            )
            for sub in r.subresources:
                verbs = ["create"] if sub in ("eviction", "binding") else ["get", "patch", "update"]
                kind = {"eviction": "Eviction", "binding": "Binding", "scale": "Scale"}.get(sub, r.kind)
                entry = {"name": f"{r.plural}/{sub}", "singularName": "", "namespaced": r.namespaced, "kind": kind}
                if sub in ("scale", "eviction"):  # kubectl drain evicts only where discovery names policy/v1
                    entry.update(group="autoscaling" if sub == "scale" else "policy", version="v1")
                resources.append({**entry, "verbs": verbs})
        group_version = f"{group}/{version}" if group else version
        return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources}
