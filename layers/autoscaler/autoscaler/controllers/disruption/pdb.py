"""PodDisruptionBudgets as disruption sees them: would evicting this pod be refused right now?

Disruption checks this before it picks a node, so that it never starts draining a node the eviction API
will not let it empty. When a PDB carries no status (the local Kubernetes emulator runs no disruption
controller) its allowance is computed here the way the disruption controller would.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from autoscaler.kube.objects import Body, Pod
from autoscaler.scheduling.requirements import RequirementError
from autoscaler.scheduling.selectors import LabelSelector

MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"
ALWAYS_ALLOW = "AlwaysAllow"


AnyPod = Mapping[str, Any] | Pod  # a pod as served, or a view of one: each pod is wrapped once per question


def _namespace(obj: Body) -> str:
    return obj.namespace or "default"


def _key(obj: Body) -> str:
    return f"{_namespace(obj)}/{obj.name}"


def _labels(pod: Pod) -> Mapping[str, str]:
    return {str(k): str(v) for k, v in pod.labels.items()}


def _ready(pod: Pod) -> str | None:
    """The status of the pod's Ready condition ("True", "False", "Unknown"), None when it has none."""
    condition = pod.condition("Ready")
    return None if condition is None else str(condition.get("status"))


def _healthy(pod: Pod) -> bool:
    return pod.phase == "Running" and _ready(pod) == "True" and not pod.deleting


def exempt(pod: AnyPod) -> bool:
    """Pods disruption never evicts, so no PDB can hold them: finished, already going, or mirror pods."""
    view = Pod.of(pod)
    return view.terminal or view.deleting or MIRROR_POD_ANNOTATION in view.annotations


def scaled(value: int | str, total: int) -> int:
    """An int-or-percent against ``total``, percentages rounded up (intstr.GetScaledValueFromIntOrPercent)."""
    if isinstance(value, str):
        text = value.strip()
        if text.endswith("%"):
            return math.ceil(int(text[:-1]) * total / 100)
        return int(text)
    return int(value)


class _Budget:
    """One PDB: its selector and, once asked, how many of its pods may be disrupted now."""

    __slots__ = ("_allowed", "_computed", "_pods", "invalid", "key", "selector", "spec", "status")

    def __init__(self, pdb: Mapping[str, Any], namespace_pods: Sequence[Mapping[str, Any]]) -> None:
        view = Body(pdb)
        self.key = _key(view)
        self.spec: Mapping[str, Any] = view.spec
        self.status: Mapping[str, Any] = view.status
        self.invalid = False
        try:
            self.selector = LabelSelector.parse(self.spec.get("selector"))
        except (RequirementError, KeyError):
            # The API server validates selectors, so this is corrupt input: fail closed and hold every pod.
            self.selector, self.invalid = LabelSelector(frozenset(), frozenset()), True
        self._pods = namespace_pods
        self._allowed: int | None = None
        self._computed = False

    def selects(self, pod: Pod) -> bool:
        return self.selector is not None and self.selector.matches(_labels(pod))

    def spares_unhealthy(self, pod: Pod) -> bool:
        """AlwaysAllow lets the eviction API evict a pod that is not Ready regardless of the budget."""
        return self.spec.get("unhealthyPodEvictionPolicy") == ALWAYS_ALLOW and _ready(pod) == "False"

    @property
    def allowed(self) -> int | None:
        """Disruptions allowed now; None when the PDB sets neither minAvailable nor maxUnavailable."""
        if not self._computed:
            self._allowed, self._computed = self._compute_allowed(), True
        return self._allowed

    def _compute_allowed(self) -> int | None:
        if self.invalid:
            return 0
        try:
            if self.status.get("disruptionsAllowed") is not None:
                return int(self.status["disruptionsAllowed"])
            return self._allowed_from_pods()
        except (TypeError, ValueError):
            return 0  # malformed budget values: fail closed

    def _allowed_from_pods(self) -> int | None:
        """As the disruption controller would: healthy selected pods beyond those the budget must keep."""
        min_available, max_unavailable = self.spec.get("minAvailable"), self.spec.get("maxUnavailable")
        selected = [p for p in map(Pod, self._pods) if not p.terminal and self.selects(p)]
        expected, healthy = len(selected), sum(1 for p in selected if _healthy(p))
        if min_available is not None:
            desired = scaled(min_available, expected)
        elif max_unavailable is not None:
            desired = max(expected - scaled(max_unavailable, expected), 0)
        else:
            return None
        # Like the controller, a budget over no pods allows nothing until it has seen some.
        return max(healthy - desired, 0) if expected > 0 else 0


class DisruptionBudgets:
    """The cluster's PDBs over its bound pods; pure, built once per disruption pass."""

    def __init__(self, pdbs: Sequence[Mapping[str, Any]], pods: Sequence[Mapping[str, Any]]) -> None:
        by_namespace: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
        for pod in pods:
            by_namespace[_namespace(Pod(pod))].append(pod)
        self._budgets: dict[str, list[_Budget]] = defaultdict(list)
        for pdb in pdbs:
            namespace = _namespace(Body(pdb))
            self._budgets[namespace].append(_Budget(pdb, by_namespace.get(namespace, [])))

    def blocking(self, pod: AnyPod) -> str | None:
        """Why evicting ``pod`` would be refused now, or None when it would not be."""
        view = Pod.of(pod)
        if exempt(view):
            return None
        selecting = [b for b in self._budgets.get(_namespace(view), ()) if b.selects(view)]
        if len(selecting) > 1:
            # The eviction API refuses pods under several PDBs outright.
            names = ", ".join(sorted(b.key for b in selecting))
            return f"pod {_key(view)} is selected by more than one PDB ({names})"
        for budget in selecting:
            if budget.invalid:
                return f"PDB {budget.key} has an invalid selector"
            allowed = budget.allowed
            if allowed is not None and allowed <= 0 and not budget.spares_unhealthy(view):
                return f"PDB {budget.key} prevents pod evictions"
        return None

    def blocking_any(self, pods: Iterable[AnyPod]) -> str | None:
        """The first reason any of ``pods`` cannot be evicted (a node's pods, say), or None."""
        for pod in pods:
            reason = self.blocking(pod)
            if reason is not None:
                return reason
        return None


__all__ = ["DisruptionBudgets", "exempt", "scaled"]
