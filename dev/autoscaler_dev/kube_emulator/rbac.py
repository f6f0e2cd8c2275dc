"""The RBAC authorizer: ClusterRoles, Roles, ClusterRoleBindings and RoleBindings, decided as the API server's
RBAC authorizer decides them.

- A rule matches when its verbs, API groups and resources (``resource/subresource``, ``*``, ``*/sub``,
  ``resource/*``) cover the request and, if it names resourceNames, the request's name is one of them (so a
  named rule never allows ``create``, ``list`` without a name, or ``deletecollection``).
- Non-resource rules match the path exactly or by a trailing ``*`` prefix, with the HTTP verb in lower case.
- A ClusterRoleBinding grants its role everywhere; a RoleBinding grants its Role, or a ClusterRole's rules, in its
  own namespace only.
- A ClusterRole with an ``aggregationRule`` has the rules of every ClusterRole its selectors match.
- Subjects: User, Group, ServiceAccount (``system:serviceaccount:<ns>:<name>``). Only allows exist.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from autoscaler_dev.kube_emulator.authentication import SERVICE_ACCOUNT_PREFIX, User
from autoscaler_dev.kube_emulator.request_info import Attributes
from autoscaler_dev.kube_emulator.selectors import selector_from_label_selector

RBAC_GROUP = "rbac.authorization.k8s.io"
KINDS = ("ClusterRole", "Role", "ClusterRoleBinding", "RoleBinding")
Manifest = Mapping[str, Any]
DECISIONS_KEPT = 50_000


class PolicyError(ValueError):
    """An RBAC manifest the API server would refuse (no name, a binding without roleRef, ...)."""


@dataclass(frozen=True)
class Rule:
    verbs: frozenset[str]
    api_groups: frozenset[str] = frozenset()
    resources: frozenset[str] = frozenset()
    resource_names: frozenset[str] = frozenset()
    non_resource_urls: tuple[str, ...] = ()

    @classmethod
    def parse(cls, raw: Manifest) -> Rule:
        return cls(
            verbs=frozenset(raw.get("verbs") or ()),
            api_groups=frozenset(raw.get("apiGroups") or ()),
            resources=frozenset(raw.get("resources") or ()),
            resource_names=frozenset(raw.get("resourceNames") or ()),
            non_resource_urls=tuple(raw.get("nonResourceURLs") or ()),
        )

    def allows(self, request: Attributes) -> bool:
        if not ("*" in self.verbs or request.verb in self.verbs):
            return False
        if not request.resource_request:
            return any(_path_matches(url, request.path) for url in self.non_resource_urls)
        if not ("*" in self.api_groups or request.api_group in self.api_groups):
            return False
        if not self._covers_resource(request.resource, request.subresource):
            return False
        return not self.resource_names or request.name in self.resource_names

    def _covers_resource(self, resource: str, subresource: str) -> bool:
        if "*" in self.resources:
            return True
        if not subresource:
            return resource in self.resources
        return bool({f"{resource}/{subresource}", f"*/{subresource}", f"{resource}/*"} & self.resources)


def _path_matches(pattern: str, path: str) -> bool:
    if pattern in ("*", path):
        return True
    return pattern.endswith("*") and path.startswith(pattern[:-1])


@dataclass(frozen=True)
class Subject:
    kind: str
    name: str
    namespace: str = ""

    def matches(self, user: User) -> bool:
        if self.kind == "User":
            return user.name == self.name
        if self.kind == "Group":
            return self.name in user.groups
        if self.kind == "ServiceAccount":
            return user.name == f"{SERVICE_ACCOUNT_PREFIX}{self.namespace}:{self.name}"
        return False


@dataclass(frozen=True)
class Binding:
    kind: str  # ClusterRoleBinding | RoleBinding
    name: str
    namespace: str  # "" for a ClusterRoleBinding
    role_kind: str  # ClusterRole | Role
    role_name: str
    subjects: tuple[Subject, ...]

    def describe(self) -> str:
        where = f" in {self.namespace}" if self.namespace else ""
        return f"{self.kind} {self.name}{where} ({self.role_kind} {self.role_name})"


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str = ""


class RBACPolicy:
    """The RBAC objects of a cluster, and the decision for a request."""

    def __init__(self, manifests: Iterable[Manifest] = ()) -> None:
        self.cluster_roles: dict[str, tuple[Rule, ...]] = {}
        self.roles: dict[tuple[str, str], tuple[Rule, ...]] = {}
        self.bindings: list[Binding] = []
        self._labels: dict[str, Mapping[str, str]] = {}
        self._aggregations: dict[str, tuple[Manifest, ...]] = {}
        self._decided: dict[Attributes, Decision] = {}  # the policy only changes in add(): decisions repeat
        self.add(manifests)

    def add(self, manifests: Iterable[Manifest]) -> RBACPolicy:
        """Load (or replace, by name) every RBAC object among ``manifests``; other kinds are ignored."""
        for manifest in manifests:
            if manifest.get("kind") in KINDS and str(manifest.get("apiVersion", "")).startswith(RBAC_GROUP):
                self._load(manifest)
        self._aggregate()
        self._decided.clear()
        return self

    def _load(self, manifest: Manifest) -> None:
        kind, metadata = manifest["kind"], manifest.get("metadata") or {}
        name, namespace = str(metadata.get("name") or ""), str(metadata.get("namespace") or "")
        if not name:
            raise PolicyError(f"a {kind} without metadata.name")
        if kind in ("Role", "RoleBinding") and not namespace:
            raise PolicyError(f"{kind} {name} has no namespace")
        if kind == "ClusterRole":
            self.cluster_roles[name] = tuple(Rule.parse(r) for r in manifest.get("rules") or ())
            self._labels[name] = metadata.get("labels") or {}
            selectors = (manifest.get("aggregationRule") or {}).get("clusterRoleSelectors") or ()
            if selectors:
                self._aggregations[name] = tuple(selectors)
        elif kind == "Role":
            self.roles[(namespace, name)] = tuple(Rule.parse(r) for r in manifest.get("rules") or ())
        else:
            self.bindings = [b for b in self.bindings if (b.kind, b.namespace, b.name) != (kind, namespace, name)]
            self.bindings.append(_binding(kind, name, namespace, manifest))

    def _aggregate(self) -> None:
        """An aggregated ClusterRole's rules are the union of the rules of the ClusterRoles its selectors pick (the
        clusterrole-aggregation controller's job, done at load)."""
        for name, selectors in self._aggregations.items():
            picks = [selector_from_label_selector(s) for s in selectors]
            rules: list[Rule] = []
            for other, labels in sorted(self._labels.items()):
                if (
                    other != name
                    and other not in self._aggregations
                    and any(p({"metadata": {"labels": labels}}) for p in picks)
                ):
                    rules += [r for r in self.cluster_roles[other] if r not in rules]
            self.cluster_roles[name] = tuple(rules)

    def rules_for(self, user: User, namespace: str) -> Iterable[tuple[Binding, tuple[Rule, ...]]]:
        """Every (binding, its role's rules) that applies to ``user`` for a request in ``namespace``."""
        for binding in self.bindings:
            if binding.namespace and binding.namespace != namespace:
                continue
            if not any(s.matches(user) for s in binding.subjects):
                continue
            if binding.role_kind == "ClusterRole":
                yield binding, self.cluster_roles.get(binding.role_name, ())
            else:
                yield binding, self.roles.get((binding.namespace, binding.role_name), ())

    def authorize(self, request: Attributes) -> Decision:
        decided = self._decided.get(request)
        if decided is None:
            if len(self._decided) >= DECISIONS_KEPT:
                self._decided.clear()
            decided = self._decided[request] = self._decide(request)
        return decided

    def _decide(self, request: Attributes) -> Decision:
        for binding, rules in self.rules_for(request.user, request.namespace):
            if any(rule.allows(request) for rule in rules):
                return Decision(True, f"RBAC: allowed by {binding.describe()}")
        return Decision(False)


def _binding(kind: str, name: str, namespace: str, manifest: Manifest) -> Binding:
    ref = manifest.get("roleRef") or {}
    role_kind, role_name = str(ref.get("kind") or ""), str(ref.get("name") or "")
    if role_kind not in ("ClusterRole", "Role") or not role_name:
        raise PolicyError(f"{kind} {name} has no valid roleRef")
    if kind == "ClusterRoleBinding" and role_kind != "ClusterRole":
        raise PolicyError(f"ClusterRoleBinding {name} may only refer to a ClusterRole")
    subjects = tuple(
        Subject(str(s.get("kind")), str(s.get("name")), str(s.get("namespace") or namespace))
        for s in manifest.get("subjects") or ()
    )
    return Binding(kind, name, namespace, role_kind, role_name, subjects)
