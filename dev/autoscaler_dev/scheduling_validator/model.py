"""The validator's own view of the world, built from raw inputs without the scheduler's machinery.

A node is a list of the label sets it may come up with (its *launches*): one for an existing node,
one per instance type option and allowed offering for a new NodeClaim. A constraint holds for a node
only if it holds for every launch. Label matching follows the Kubernetes API's definitions directly.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from autoscaler.apis.resources import Resources, parse_resources
from autoscaler.apis.v1 import labels as wk

KubeObject = Mapping[str, Any]
Labels = dict[str, str]


def with_aliases(labels: Mapping[str, str]) -> Labels:
    """A node's labels, answering to the deprecated beta names too (kubelets and Karpenter set both)."""
    result = dict(labels)
    for beta, stable in wk.NORMALIZED_LABELS.items():
        if stable in result:
            result.setdefault(beta, result[stable])
    return result


def expression_holds(labels: Mapping[str, str], expression: Mapping[str, Any]) -> bool:
    operator = expression["operator"]
    values: Any = expression.get("values") or ()
    value = labels.get(expression["key"])
    if operator == "In":
        return value is not None and value in values
    if operator == "NotIn":
        return value is None or value not in values
    if operator == "Exists":
        return value is not None
    if operator == "DoesNotExist":
        return value is None
    if value is None or not value.lstrip("-").isdigit():
        return False
    number, bound = int(value), int(values[0])
    return {"Gt": number > bound, "Lt": number < bound, "Gte": number >= bound, "Lte": number <= bound}[operator]


def term_holds(
    labels: Mapping[str, str], expressions: Iterable[Mapping[str, Any]], unknown: frozenset[str] = frozenset()
) -> bool:
    """Every expression holds; expressions on ``unknown`` keys (set only once the node exists) are skipped."""
    return all(expression_holds(labels, e) for e in expressions if e["key"] not in unknown)


def selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """``metav1.LabelSelector`` semantics: null matches nothing, empty matches everything."""
    if selector is None:
        return False
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    return term_holds(labels, selector.get("matchExpressions") or ())


def tolerated(taint: Mapping[str, Any], tolerations: Sequence[Mapping[str, Any]]) -> bool:
    for toleration in tolerations:
        effect = toleration.get("effect") or ""
        if effect and effect != taint.get("effect"):
            continue
        key = toleration.get("key") or ""
        if key and key != taint.get("key"):
            continue
        if (toleration.get("operator") or "Equal") == "Exists" or (toleration.get("value") or "") == (
            taint.get("value") or ""
        ):
            return True
    return False


def hard_taints_tolerated(taints: Iterable[Mapping[str, Any]], tolerations: Sequence[Mapping[str, Any]]) -> bool:
    """NoSchedule and NoExecute taints bind; PreferNoSchedule is a preference."""
    return all(tolerated(t, tolerations) for t in taints if t.get("effect") != "PreferNoSchedule")


def node_affinity_holds(spec: Mapping[str, Any], labels: Mapping[str, str], unknown: frozenset[str]) -> bool:
    """The pod's nodeSelector and required node affinity (any term; matchFields are not considered)."""
    if any(labels.get(k) != str(v) for k, v in (spec.get("nodeSelector") or {}).items() if k not in unknown):
        return False
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    if not required:
        return True
    terms = required.get("nodeSelectorTerms") or ()
    return any(term_holds(labels, t.get("matchExpressions") or (), unknown) for t in terms)


def requests_of(pod: KubeObject) -> Resources:
    """The kube-scheduler's effective request: containers plus sidecars, or the largest init step."""
    spec = pod.get("spec") or {}

    def of(container: Mapping[str, Any]) -> Resources:
        resources = container.get("resources") or {}
        return parse_resources({**(resources.get("limits") or {}), **(resources.get("requests") or {})})

    total: Resources = {}
    sidecars: Resources = {}
    peak: Resources = {}
    for container in spec.get("containers") or ():
        for k, v in of(container).items():
            total[k] = total.get(k, 0) + v
    for container in spec.get("initContainers") or ():
        amounts = of(container)
        if container.get("restartPolicy") == "Always":
            for k, v in amounts.items():
                total[k] = total.get(k, 0) + v
                sidecars[k] = sidecars.get(k, 0) + v
            step = dict(sidecars)
        else:
            step = {k: amounts.get(k, 0) + sidecars.get(k, 0) for k in {*amounts, *sidecars}}
        for k, v in step.items():
            peak[k] = max(peak.get(k, 0), v)
    for k, v in peak.items():
        total[k] = max(total.get(k, 0), v)
    for k, v in parse_resources((spec.get("resources") or {}).get("requests")).items():
        if k in ("cpu", "memory"):
            total[k] = v
    for k, v in parse_resources(spec.get("overhead")).items():
        total[k] = total.get(k, 0) + v
    total["pods"] = total.get("pods", 0) + 1
    return total


def pod_key(pod: KubeObject) -> tuple[str, str]:
    metadata = pod.get("metadata") or {}
    return (str(metadata.get("namespace") or "default"), str(metadata.get("name") or ""))


@dataclass
class Launch:
    """One way a node may come up: its labels and what pods may request of it."""

    labels: Labels
    allocatable: Resources
    capacity: Resources
    price: float = 0.0
    instance_type: str = ""
    unknown: frozenset[str] = frozenset()  # well-known labels the cloud sets at launch (region, ...)


@dataclass
class VNode:
    """A node pods may be on: existing, in flight, or new (with several possible launches)."""

    name: str
    kind: str  # "node" | "nodeclaim" | "new"
    source: list[Launch] | Callable[[], list[Launch]]  # a new node's launches are rebuilt when asked for
    taints: list[dict[str, Any]]
    nodepool: str | None
    bound: list[KubeObject] = field(default_factory=list)
    placed: list[KubeObject] = field(default_factory=list)
    options: list[Resources] = field(default_factory=list)  # a new node: the capacity of each option

    @property
    def launches(self) -> list[Launch]:
        """The node's possible launches. A new node's are built on demand rather than kept: thousands of
        NodeClaims with dozens of options in several zones would otherwise hold millions of label sets."""
        return self.source() if callable(self.source) else self.source

    def largest(self, resource: str) -> int:
        """The most of ``resource`` the node may have (what NodePool limits count)."""
        capacities = self.options or [launch.capacity for launch in self.launches]
        return max((capacity.get(resource, 0) for capacity in capacities), default=0)

    def domains(self, key: str) -> set[str]:
        """Every value ``key`` may take on this node (empty: the node will not have the label)."""
        return {launch.labels[key] for launch in self.launches if key in launch.labels}

    def domain(self, key: str) -> str | None:
        """The value of ``key`` if every launch agrees on it, else None."""
        launches = self.launches
        values = {launch.labels[key] for launch in launches if key in launch.labels}
        if len(values) == 1 and all(key in launch.labels for launch in launches):
            return next(iter(values))
        return None
