"""Topology: every spread and pod (anti-)affinity group of a scheduling pass, and the domains they allow.

Groups are created from the pods' constraints and seeded with the domains NodePools can launch into
and the domains of existing nodes, then counted from the pods already running. As the scheduler
places pods, :meth:`Topology.record` updates the counts; :meth:`Topology.add_requirements` narrows a
node's requirements to the domains the pod may use there.

Besides the groups a pod owns, pods must respect the *inverse* of other pods' required anti-affinity:
a pod selected by someone's anti-affinity term must stay out of that someone's domains.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from autoscaler.apis.v1.labels import LABEL_HOSTNAME
from autoscaler.scheduling.constraints import DO_NOT_SCHEDULE, HONOR, AffinityTerm, PodConstraints
from autoscaler.scheduling.pods import PodInfo
from autoscaler.scheduling.requirements import Requirement, Requirements, exists
from autoscaler.scheduling.selectors import LabelSelector
from autoscaler.scheduling.taints import Taint, untolerated
from autoscaler.scheduling.topologygroup import (
    AFFINITY,
    ANTI_AFFINITY,
    SPREAD,
    UNBOUNDED_SKEW,
    NodeFilter,
    TopologyGroup,
)

# Domains per topology key: domain -> the taint sets of the NodePools that can launch into it.
DomainUniverse = Callable[[str], Mapping[str, Sequence[tuple[Taint, ...]]]]


@dataclass
class CountedNode:
    """A node whose pods count for topology: an existing node with the pods bound to it."""

    name: str
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    pods: Sequence[PodInfo]
    requirements: Requirements = field(default_factory=Requirements)  # from the labels when left empty

    def __post_init__(self) -> None:
        if not self.requirements:
            self.requirements = Requirements.from_labels(self.labels)

    def domain(self, key: str) -> str | None:
        value = self.labels.get(key)
        if value is None and key == LABEL_HOSTNAME:
            return self.name  # a node without its hostname label yet still is its own domain
        return value


class TopologyError(Exception):
    """No domain satisfies a group; the message is built only when someone reads it."""

    def __init__(self, group: TopologyGroup, pod_domains: Requirement, node_domains: Requirement) -> None:
        super().__init__()
        self.group = group
        self.pod_domains = pod_domains
        self.node_domains = node_domains

    def __str__(self) -> str:
        return (
            f"{self.group.describe()}: no domain left "
            f"(pod allows {self.pod_domains!r}, node allows {self.node_domains!r})"
        )


Placement = tuple[PodInfo, tuple[Taint, ...], Requirements, frozenset[str]]


class Topology:
    def __init__(
        self,
        universe: DomainUniverse,
        nodes: Sequence[CountedNode],
        namespaces: Mapping[str, Mapping[str, str]],
        excluded: frozenset[str],
        respect_preferences: bool,
        *,
        pending_namespaces: frozenset[str] = frozenset(),
    ) -> None:
        """``namespaces``: labels by namespace; ``pending_namespaces``: those of the pods of the pass, which a
        ``namespaceSelector`` may select even when their labels are unknown (an empty selector selects all)."""
        self._universe = universe
        self._nodes = nodes
        self._namespaces = namespaces
        self._pending_namespaces = pending_namespaces
        self._excluded = excluded  # pods being scheduled are counted where they land, not where they were
        self.respect_preferences = respect_preferences
        self.groups: dict[tuple[object, ...], TopologyGroup] = {}
        self.inverse: dict[tuple[object, ...], TopologyGroup] = {}
        self._owned: dict[tuple[object, ...], tuple[TopologyGroup, ...]] = {}
        self._selecting: dict[int, tuple[TopologyGroup, ...]] = {}
        self._inverse_selecting: dict[int, tuple[TopologyGroup, ...]] = {}
        self._hostnames: list[str] = []
        self._placements: list[Placement] = []
        self._known_namespaces: set[str] | None = None
        self.derived: dict[tuple[object, int], Any] = {}  # per (constraints, label class): see PodState
        for node in nodes:
            for pod in node.pods:
                if not pod.terminal and pod.ref.uid not in excluded:
                    self._track_inverse(pod, node)

    # --- groups ----------------------------------------------------------------------------------
    def groups_for(self, pod: PodInfo, constraints: PodConstraints) -> tuple[TopologyGroup, ...]:
        """The groups ``constraints`` impose on ``pod`` (created and counted on first use)."""
        by_labels = any(s.match_label_keys for s in constraints.spreads)
        key = (constraints, pod.namespace, pod.label_class if by_labels else -1)
        owned = self._owned.get(key)
        if owned is None:
            owned = self._owned[key] = tuple(self._build(pod, constraints))
        return owned

    def _build(self, pod: PodInfo, c: PodConstraints) -> Iterable[TopologyGroup]:
        respect = self.respect_preferences
        for spread in c.spreads:
            if not respect and spread.when_unsatisfiable != DO_NOT_SCHEDULE:
                continue
            selector = spread.selector
            for label in spread.match_label_keys:
                if label in pod.labels:
                    base = selector or LabelSelector(frozenset(), frozenset())
                    selector = base.with_expression(label, pod.labels[label])
            alternatives = tuple(c.node_selector.merged(term) for term in c.required_terms) or (c.node_selector,)
            node_filter = NodeFilter(
                alternatives,
                spread.node_affinity_policy == HONOR,
                spread.node_taints_policy == HONOR,
                c.tolerations,
                repr(alternatives),
            )
            namespaces = frozenset({pod.namespace})
            yield self._group(
                self.groups,
                SPREAD,
                spread.topology_key,
                namespaces,
                selector,
                max_skew=spread.max_skew,
                min_domains=spread.min_domains,
                node_filter=node_filter,
            )
        for kind, required, preferred in (
            (AFFINITY, c.affinity, c.preferred_affinity),
            (ANTI_AFFINITY, c.anti_affinity, c.preferred_anti_affinity),
        ):
            for term in (*required, *preferred) if respect else required:
                yield self._term_group(self.groups, kind, term, pod.namespace)

    def inverse_for(self, pod: PodInfo) -> tuple[TopologyGroup, ...]:
        """Inverse groups of a pod's required anti-affinity terms: they track where the pod is, so that
        the pods it repels stay away."""
        return tuple(
            self._term_group(self.inverse, ANTI_AFFINITY, t, pod.namespace) for t in pod.constraints.anti_affinity
        )

    def _term_group(
        self, registry: dict[tuple[object, ...], TopologyGroup], kind: str, term: AffinityTerm, namespace: str
    ) -> TopologyGroup:
        namespaces = self._term_namespaces(term, namespace)
        return self._group(
            registry,
            kind,
            term.topology_key,
            namespaces,
            term.selector,
            max_skew=UNBOUNDED_SKEW,
            min_domains=None,
            node_filter=None,
        )

    def _term_namespaces(self, term: AffinityTerm, namespace: str) -> frozenset[str]:
        if term.namespace_selector is None:
            return term.namespaces or frozenset({namespace})
        if self._known_namespaces is None:
            running = {p.namespace for n in self._nodes for p in n.pods}
            self._known_namespaces = set(self._namespaces) | running | self._pending_namespaces
        selector = term.namespace_selector
        known = self._known_namespaces | {namespace}
        return term.namespaces | {ns for ns in known if selector.matches(self._namespaces.get(ns, {}))}

    def _group(
        self,
        registry: dict[tuple[object, ...], TopologyGroup],
        kind: str,
        key: str,
        namespaces: frozenset[str],
        selector: LabelSelector | None,
        *,
        max_skew: int,
        min_domains: int | None,
        node_filter: NodeFilter | None,
    ) -> TopologyGroup:
        identity = (kind, key, namespaces, selector, max_skew, min_domains, node_filter)
        group = registry.get(identity)
        if group is None:
            group = TopologyGroup(
                kind, key, namespaces, selector, max_skew=max_skew, min_domains=min_domains, node_filter=node_filter
            )
            self._seed(group, inverse=registry is self.inverse)
            registry[identity] = group
            self._selecting.clear()
            self._inverse_selecting.clear()
            self.derived.clear()
        return group

    def _seed(self, group: TopologyGroup, inverse: bool) -> None:
        honor_taints = group.node_filter is not None and group.node_filter.honor_taints
        for domain, taint_sets in self._universe(group.key).items():
            if not honor_taints or any(untolerated(t, group.node_filter.tolerations) is None for t in taint_sets):  # type: ignore[union-attr]
                group.register(domain)
        if group.hostname:
            group.register(*self._hostnames)
        if inverse:
            return
        for node in self._nodes:
            value = node.domain(group.key)
            if value is None or not group.counts_node(node.taints, node.requirements, frozenset()):
                continue
            domain = value
            group.register(domain)
            for pod in node.pods:
                counted = not pod.terminal and pod.ref.uid not in self._excluded
                if counted and group.selects(pod.namespace, pod.labels, pod.label_class):
                    group.record(domain)
        for placement in self._placements:  # a group born mid-pass also counts the pods placed so far
            self._record_in(group, *placement)

    def _track_inverse(self, pod: PodInfo, node: CountedNode) -> None:
        for group in self.inverse_for(pod):
            domain = node.domain(group.key)
            if domain is not None:
                group.record(domain)

    def selecting(self, pod: PodInfo) -> tuple[TopologyGroup, ...]:
        groups = self._selecting.get(pod.label_class)
        if groups is None:
            groups = self._selecting[pod.label_class] = tuple(
                g for g in self.groups.values() if g.selects(pod.namespace, pod.labels, pod.label_class)
            )
        return groups

    def inverse_selecting(self, pod: PodInfo) -> tuple[TopologyGroup, ...]:
        groups = self._inverse_selecting.get(pod.label_class)
        if groups is None:
            groups = self._inverse_selecting[pod.label_class] = tuple(
                g for g in self.inverse.values() if g.selects(pod.namespace, pod.labels, pod.label_class)
            )
        return groups

    def register_host(self, hostname: str) -> None:
        self._hostnames.append(hostname)
        for registry in (self.groups, self.inverse):
            for group in registry.values():
                if group.hostname:
                    group.register(hostname)

    # --- placing pods ----------------------------------------------------------------------------
    def add_requirements(
        self,
        pod: PodInfo,
        owned: tuple[TopologyGroup, ...],
        strict: Mapping[str, Requirement],
        node: Requirements,
    ) -> Requirements:
        """``node`` narrowed to the domains every relevant group allows. Raises TopologyError."""
        groups = owned + self.inverse_selecting(pod) if self.inverse else owned
        if not groups:
            return node
        result = Requirements(node)
        for group in groups:
            selects = group.selects(pod.namespace, pod.labels, pod.label_class)
            pod_domains = strict.get(group.key) or exists(group.key)
            node_domains = node.get(group.key) or exists(group.key)
            domains = group.next_domains(selects, pod_domains, node_domains)
            if not domains.values:
                raise TopologyError(group, pod_domains, node_domains)
            result.add(domains)
            narrowed = result[group.key]
            if not narrowed.complement and not narrowed.values:
                raise TopologyError(group, pod_domains, node_domains)
        return result

    def unsettled(
        self, pod: PodInfo, taints: tuple[Taint, ...], requirements: Requirements, allow: frozenset[str]
    ) -> list[TopologyGroup]:
        """Spreads and affinities that would count ``pod`` on a new node whose domain for their key is still
        open. The node must settle on one first: a pod counts in exactly one domain or the counts drift
        from where pods really land (Karpenter leaves such pods uncounted)."""
        unsettled = []
        for group in self.selecting(pod):
            if group.kind == ANTI_AFFINITY or group.hostname:
                continue
            domain = requirements.get(group.key)
            if domain is not None and not domain.complement and len(domain.values) == 1:
                continue
            if group.counts_node(taints, requirements, allow):
                unsettled.append(group)
        return unsettled

    def record(
        self,
        pod: PodInfo,
        inverse: tuple[TopologyGroup, ...],
        taints: tuple[Taint, ...],
        requirements: Requirements,
        allow: frozenset[str],
    ) -> None:
        """Count ``pod`` where it was placed (a node with ``taints`` and ``requirements``)."""
        for group in self.selecting(pod):
            self._record_in(group, pod, taints, requirements, allow)
        for group in inverse:
            group.record(*self._possible_domains(group, requirements, allow))
        self._placements.append((pod, taints, requirements, allow))

    def _record_in(
        self,
        group: TopologyGroup,
        pod: PodInfo,
        taints: tuple[Taint, ...],
        requirements: Requirements,
        allow: frozenset[str],
    ) -> None:
        if not group.selects(pod.namespace, pod.labels, pod.label_class):
            return
        if not group.counts_node(taints, requirements, allow):
            return
        if group.kind == ANTI_AFFINITY:  # repel from every domain the pod might end up in
            group.record(*self._possible_domains(group, requirements, allow))
            return
        domain = requirements.get(group.key)
        if domain is not None and not domain.complement and len(domain.values) == 1:
            group.record(*domain.values)

    @staticmethod
    def _possible_domains(group: TopologyGroup, requirements: Requirements, allow: frozenset[str]) -> list[str]:
        """Where a placed pod may be: one domain on an existing node (none if it lacks the label); on a new
        node (``allow`` non-empty), every domain its requirements still permit."""
        domain = requirements.get(group.key)
        if domain is None:
            return list(group.domains) if allow else []
        if not domain.complement:
            return sorted(domain.values)
        return [d for d in group.domains if domain.has(d)]
