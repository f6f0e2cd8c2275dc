"""A pod's placement constraints, parsed once from its spec and shared by identical pods.

:class:`PodConstraints` is immutable: preference relaxation (``preferences.py``) derives a new one
rather than editing a pod. Pods of one Deployment share one object, so everything derived from it
(requirements, topology groups) is computed once per distinct spec, not once per pod.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from autoscaler.scheduling.requirements import RequirementError, Requirements
from autoscaler.scheduling.selectors import LabelSelector
from autoscaler.scheduling.taints import Toleration, parse_tolerations

DO_NOT_SCHEDULE, SCHEDULE_ANYWAY = "DoNotSchedule", "ScheduleAnyway"
HONOR, IGNORE = "Honor", "Ignore"


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    """A pod (anti-)affinity term: pods matching ``selector`` in ``namespaces`` (or in namespaces matching
    ``namespace_selector``; the pod's own namespace when neither is given), per ``topology_key`` domain."""

    topology_key: str
    selector: LabelSelector | None
    namespaces: frozenset[str]
    namespace_selector: LabelSelector | None
    weight: int = 0

    @classmethod
    def parse(cls, raw: Mapping[str, Any], weight: int = 0) -> AffinityTerm:
        return cls(
            topology_key=str(raw.get("topologyKey") or ""),
            selector=LabelSelector.parse(raw.get("labelSelector")),
            namespaces=frozenset(str(n) for n in raw.get("namespaces") or ()),
            namespace_selector=LabelSelector.parse(raw.get("namespaceSelector")),
            weight=weight,
        )


@dataclass(frozen=True, slots=True)
class SpreadConstraint:
    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    selector: LabelSelector | None
    min_domains: int | None = None
    node_affinity_policy: str = HONOR
    node_taints_policy: str = IGNORE
    match_label_keys: tuple[str, ...] = ()

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> SpreadConstraint:
        max_skew = int(raw.get("maxSkew", 1))
        if max_skew < 1:
            raise RequirementError(f"topology spread maxSkew must be at least 1, got {max_skew}")
        return cls(
            max_skew=max_skew,
            topology_key=str(raw.get("topologyKey") or ""),
            when_unsatisfiable=str(raw.get("whenUnsatisfiable") or DO_NOT_SCHEDULE),
            selector=LabelSelector.parse(raw.get("labelSelector")),
            min_domains=int(raw["minDomains"]) if raw.get("minDomains") is not None else None,
            node_affinity_policy=str(raw.get("nodeAffinityPolicy") or HONOR),
            node_taints_policy=str(raw.get("nodeTaintsPolicy") or IGNORE),
            match_label_keys=tuple(str(k) for k in raw.get("matchLabelKeys") or ()),
        )


@dataclass(frozen=True, slots=True)
class NodePreference:
    weight: int
    requirements: Requirements = field(hash=False, compare=False)
    raw: str = ""  # the term as written, for equality and messages


@dataclass(frozen=True, eq=False)
class PodConstraints:
    """Node selection, tolerations, spreads and pod (anti-)affinity of a pod. Compared by identity."""

    node_selector: Requirements
    required_terms: tuple[Requirements, ...]  # OR'd; Karpenter tries the first, relaxing to the next
    preferred_terms: tuple[NodePreference, ...]  # heaviest first
    tolerations: tuple[Toleration, ...]
    spreads: tuple[SpreadConstraint, ...] = ()
    affinity: tuple[AffinityTerm, ...] = ()
    preferred_affinity: tuple[AffinityTerm, ...] = ()  # heaviest first
    anti_affinity: tuple[AffinityTerm, ...] = ()
    preferred_anti_affinity: tuple[AffinityTerm, ...] = ()  # heaviest first
    relaxed: tuple[str, ...] = ()  # what relaxation removed or added, in order
    _cache: dict[str, Requirements] = field(default_factory=dict, repr=False)

    def requirements(self, respect_preferences: bool) -> Requirements:
        """Node requirements: the node selector, the first required term and, when preferences are respected,
        the heaviest preferred term (tried as if required until relaxed)."""
        name = "all" if respect_preferences and self.preferred_terms else "strict"
        cached = self._cache.get(name)
        if cached is None:
            cached = Requirements(self.node_selector)
            if name == "all":
                cached.add(*self.preferred_terms[0].requirements.values())
            if self.required_terms:
                cached.add(*self.required_terms[0].values())
            self._cache[name] = cached
        return cached

    def strict_requirements(self) -> Requirements:
        """Requirements without preferences: what limits the topology domains a pod may use."""
        return self.requirements(respect_preferences=False)

    def replace(self, reason: str, **changes: Any) -> PodConstraints:
        return dataclasses.replace(self, relaxed=(*self.relaxed, reason), _cache={}, **changes)

    @property
    def has_anti_affinity(self) -> bool:
        return bool(self.anti_affinity or self.preferred_anti_affinity)


def _by_weight(items: list[tuple[int, Any]]) -> tuple[Any, ...]:
    return tuple(item for _, item in sorted(items, key=lambda pair: -pair[0]))


def _terms(affinity: Mapping[str, Any], kind: str) -> tuple[tuple[AffinityTerm, ...], tuple[AffinityTerm, ...]]:
    section = affinity.get(kind) or {}
    required = tuple(AffinityTerm.parse(t) for t in section.get("requiredDuringSchedulingIgnoredDuringExecution") or ())
    preferred = [
        (int(t.get("weight", 0)), AffinityTerm.parse(t.get("podAffinityTerm") or {}, int(t.get("weight", 0))))
        for t in section.get("preferredDuringSchedulingIgnoredDuringExecution") or ()
    ]
    return required, _by_weight(preferred)


def parse_constraints(spec: Mapping[str, Any]) -> PodConstraints:
    """Parse a pod spec's constraints. Raises RequirementError (or KeyError/ValueError/TypeError on
    malformed fields) for a spec that cannot be interpreted."""
    affinity = spec.get("affinity") or {}
    node_affinity = affinity.get("nodeAffinity") or {}
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    terms = tuple(
        Requirements.from_selector(t.get("matchExpressions") or ()) for t in required.get("nodeSelectorTerms") or ()
    )
    preferred = [
        (
            int(t.get("weight", 0)),
            NodePreference(
                int(t.get("weight", 0)),
                Requirements.from_selector((t.get("preference") or {}).get("matchExpressions") or ()),
                repr(t.get("preference")),
            ),
        )
        for t in node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or ()
    ]
    pod_affinity, preferred_pod_affinity = _terms(affinity, "podAffinity")
    anti_affinity, preferred_anti_affinity = _terms(affinity, "podAntiAffinity")
    return PodConstraints(
        node_selector=Requirements.from_labels({str(k): str(v) for k, v in (spec.get("nodeSelector") or {}).items()}),
        required_terms=terms,
        preferred_terms=_by_weight(preferred),
        tolerations=parse_tolerations(spec.get("tolerations")),
        spreads=tuple(SpreadConstraint.parse(c) for c in spec.get("topologySpreadConstraints") or ()),
        affinity=pod_affinity,
        preferred_affinity=preferred_pod_affinity,
        anti_affinity=anti_affinity,
        preferred_anti_affinity=preferred_anti_affinity,
    )
