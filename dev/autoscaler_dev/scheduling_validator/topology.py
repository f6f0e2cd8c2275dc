"""Pod affinity, anti-affinity and topology spread, re-checked by replaying the placements in order.

The result lists placements in the order they were made, which is an order the pods can be bound in.
Replaying it, each pod must satisfy its required terms against the pods already present, by the
kube-scheduler's rules: anti-affinity in no domain the node might be in (uncertain domains count as
possible), affinity in every domain it might be in, and a DoNotSchedule spread within its skew over the
eligible nodes' domains. A pod matching its own affinity term may start a domain when no matching pod is
in a domain its node selector and required node affinity allow (Karpenter's rule; the kube-scheduler's is
narrower: no matching pod anywhere).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from autoscaler_dev.scheduling_validator.model import (
    KubeObject,
    VNode,
    expression_holds,
    hard_taints_tolerated,
    node_affinity_holds,
    selector_matches,
)

Term = Mapping[str, Any]


def _meta(pod: KubeObject) -> tuple[str, Mapping[str, str]]:
    metadata = pod.get("metadata") or {}
    return str(metadata.get("namespace") or "default"), metadata.get("labels") or {}


class Counter:
    """Pods matching one selector in some namespaces, by the domains of one key."""

    def __init__(self, key: str, namespaces: frozenset[str], selector: Mapping[str, Any] | None) -> None:
        self.key, self.namespaces, self.selector = key, namespaces, selector
        self.definite: dict[str, int] = {}  # domain -> pods known to be there
        self.possible: dict[str, int] = {}  # domain -> pods that may be there
        self.per_node: dict[str, int] = {}  # node -> pods (nodes with a definite domain)
        self.total = 0

    def matches(self, pod: KubeObject) -> bool:
        namespace, labels = _meta(pod)
        return namespace in self.namespaces and selector_matches(self.selector, labels)

    def add(self, node: str, definite: str | None, possible: Iterable[str]) -> None:
        self.total += 1
        for domain in possible:
            self.possible[domain] = self.possible.get(domain, 0) + 1
        if definite is not None:
            self.definite[definite] = self.definite.get(definite, 0) + 1
            self.per_node[node] = self.per_node.get(node, 0) + 1


class Replay:
    def __init__(self, nodes: Sequence[VNode], namespaces: Mapping[str, Mapping[str, str]]) -> None:
        self.nodes = nodes
        self.namespace_labels = namespaces
        self.located: list[tuple[KubeObject, VNode]] = [(pod, node) for node in nodes for pod in node.bound]
        self.counters: dict[str, Counter] = {}
        # Terms of located pods' required anti-affinity, with the domains those pods may be in.
        self.repelling: dict[str, tuple[Counter, dict[str, int]]] = {}
        self._domains: dict[tuple[str, str], tuple[str | None, frozenset[str]]] = {}
        self._eligible: dict[tuple[str, str], tuple[bool, set[str], set[str]]] = {}
        self._domain_of: dict[tuple[str, str], str] = {}
        self._everywhere: dict[tuple[str, str], bool] = {}
        self.errors: list[str] = []
        for pod, node in self.located:
            self._repel(pod, node)

    def domains(self, node: VNode, key: str) -> tuple[str | None, frozenset[str]]:
        """The node's definite domain of ``key`` (None unless every launch has the same) and every possible one."""
        cached = self._domains.get((node.name, key))
        if cached is None:
            launches = node.launches
            values = frozenset(launch.labels[key] for launch in launches if key in launch.labels)
            everywhere = all(key in launch.labels for launch in launches)
            definite = next(iter(values)) if len(values) == 1 and everywhere else None
            cached = self._domains[(node.name, key)] = (definite, values)
            self._everywhere[(node.name, key)] = everywhere
        return cached

    def _namespaces(self, pod: KubeObject, term: Term) -> frozenset[str]:
        namespace, _ = _meta(pod)
        listed = frozenset(str(n) for n in term.get("namespaces") or ())
        selector = term.get("namespaceSelector")
        if selector is None:
            return listed or frozenset({namespace})
        known = set(self.namespace_labels) | {_meta(p)[0] for p, _ in self.located} | {namespace}
        return listed | {n for n in known if selector_matches(selector, self.namespace_labels.get(n, {}))}

    def counter(self, key: str, namespaces: frozenset[str], selector: Mapping[str, Any] | None) -> Counter:
        name = _name_of(key, namespaces, selector)
        counter = self.counters.get(name)
        if counter is None:
            counter = self.counters[name] = Counter(key, namespaces, selector)
            for pod, node in self.located:
                if counter.matches(pod):
                    counter.add(node.name, *self.domains(node, key))
        return counter

    def _repel(self, pod: KubeObject, node: VNode) -> None:
        for term in _terms(pod, "podAntiAffinity"):
            key, namespaces, selector = (
                term.get("topologyKey", ""),
                self._namespaces(pod, term),
                term.get("labelSelector"),
            )
            name = _name_of(key, namespaces, selector)
            _, domains = self.repelling.setdefault(name, (Counter(key, namespaces, selector), {}))
            for domain in self.domains(node, key)[1]:
                domains[domain] = domains.get(domain, 0) + 1

    def place(self, pod: KubeObject, node: VNode) -> None:
        name = f"{_meta(pod)[0]}/{(pod.get('metadata') or {}).get('name')}"
        for term in _terms(pod, "podAntiAffinity"):
            key = term.get("topologyKey", "")
            counter = self.counter(key, self._namespaces(pod, term), term.get("labelSelector"))
            if any(counter.possible.get(d) for d in self.domains(node, key)[1]):
                self.errors.append(f"pod {name} shares a {key} domain with a pod its anti-affinity excludes")
        for counter, domains in self.repelling.values():
            if counter.matches(pod) and any(domains.get(d) for d in self.domains(node, counter.key)[1]):
                self.errors.append(
                    f"pod {name} is in a {counter.key} domain another pod's anti-affinity excludes it from"
                )
        for term in _terms(pod, "podAffinity"):
            key = term.get("topologyKey", "")
            counter = self.counter(key, self._namespaces(pod, term), term.get("labelSelector"))
            possible = self.domains(node, key)[1]
            spec = pod.get("spec") or {}
            if counter.matches(pod) and not any(n and _may_use(spec, key, d) for d, n in counter.possible.items()):
                continue  # no matching pod where this pod may go: a self-affine pod starts a domain of its own
            everywhere = self._everywhere[(node.name, key)]
            if not possible or not everywhere or any(not counter.definite.get(d) for d in possible):
                self.errors.append(f"pod {name} is not in a {key} domain with a pod its affinity requires")
        for spread in (pod.get("spec") or {}).get("topologySpreadConstraints") or ():
            if spread.get("whenUnsatisfiable", "DoNotSchedule") == "DoNotSchedule":
                self._check_spread(pod, name, node, spread)
        for counter in self.counters.values():
            if counter.matches(pod):
                counter.add(node.name, *self.domains(node, counter.key))
        self.located.append((pod, node))
        self._repel(pod, node)

    def _check_spread(self, pod: KubeObject, name: str, node: VNode, spread: Mapping[str, Any]) -> None:
        key = str(spread.get("topologyKey"))
        namespace, labels = _meta(pod)
        selector = dict(spread.get("labelSelector") or {}) if spread.get("labelSelector") is not None else None
        for label in spread.get("matchLabelKeys") or ():
            if label in labels and selector is not None:
                expressions = [
                    *(selector.get("matchExpressions") or ()),
                    {"key": label, "operator": "In", "values": [labels[label]]},
                ]
                selector = {**selector, "matchExpressions": expressions}
        counter = self.counter(key, frozenset({namespace}), selector)
        domain = self.domains(node, key)[0]
        if domain is None:
            self.errors.append(f"pod {name} spreads on {key} but its node's {key} is not determined")
            return
        everywhere, names, domains = self._eligible_nodes(pod, spread, key)
        if everywhere:  # every node counts: the counter's own tally is the answer
            counts = counter.definite
        else:
            counts = {}
            for node_name, count in counter.per_node.items():
                if node_name in names:
                    d = self._domain_of[(node_name, key)]
                    counts[d] = counts.get(d, 0) + count
        own = counts.get(domain, 0)
        minimum = min(counts.values(), default=0) if len(counts) >= len(domains) else 0
        if spread.get("minDomains") is not None and len(domains) < int(spread["minDomains"]):
            minimum = 0
        if own + counter.matches(pod) - minimum > int(spread.get("maxSkew", 1)):
            self.errors.append(f"pod {name} breaks its {key} spread: {own} there, {minimum} in the emptiest domain")

    def _eligible_nodes(self, pod: KubeObject, spread: Mapping[str, Any], key: str) -> tuple[bool, set[str], set[str]]:
        """Whether every node counts for this spread, and the names and domains of the nodes that do."""
        spec = pod.get("spec") or {}
        honor_affinity = spread.get("nodeAffinityPolicy", "Honor") == "Honor"
        honor_taints = spread.get("nodeTaintsPolicy", "Ignore") == "Honor"
        signature = json.dumps(
            [
                spec.get("nodeSelector") if honor_affinity else None,
                spec.get("affinity") if honor_affinity else None,
                spec.get("tolerations") if honor_taints else None,
            ],
            sort_keys=True,
        )
        cached = self._eligible.get((signature, key))
        if cached is None:
            names, domains, everywhere = set(), set(), True
            for n in self.nodes:
                domain = self.domains(n, key)[0]
                if domain is None:
                    continue
                if (honor_taints and not hard_taints_tolerated(n.taints, spec.get("tolerations") or ())) or (
                    honor_affinity
                    and not all(node_affinity_holds(spec, launch.labels, launch.unknown) for launch in n.launches)
                ):
                    everywhere = False
                    continue
                names.add(n.name)
                domains.add(domain)
                self._domain_of[(n.name, key)] = domain
            cached = self._eligible[(signature, key)] = (everywhere, names, domains)
        return cached


def _may_use(spec: Mapping[str, Any], key: str, domain: str) -> bool:
    """The pod's node selector and some required node affinity term allow ``key=domain`` (other keys aside)."""
    selector = spec.get("nodeSelector") or {}
    if key in selector and str(selector[key]) != domain:
        return False
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    terms = (required or {}).get("nodeSelectorTerms") or ()
    labels = {key: domain}
    return not terms or any(
        all(expression_holds(labels, e) for e in t.get("matchExpressions") or () if e.get("key") == key) for t in terms
    )


def _name_of(key: str, namespaces: frozenset[str], selector: Mapping[str, Any] | None) -> str:
    return json.dumps([key, sorted(namespaces), selector], sort_keys=True)


def _terms(pod: KubeObject, kind: str) -> list[Term]:
    section = ((pod.get("spec") or {}).get("affinity") or {}).get(kind) or {}
    return list(section.get("requiredDuringSchedulingIgnoredDuringExecution") or ())
