"""Taints and tolerations as the kube-scheduler matches them.

Taints and tolerations are kept as small immutable tuples so that sets of them can be cached by value:
a taint is ``(key, value, effect)``, a toleration ``(key, operator, value, effect)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

NO_SCHEDULE, PREFER_NO_SCHEDULE, NO_EXECUTE = "NoSchedule", "PreferNoSchedule", "NoExecute"

Taint = tuple[str, str, str]  # key, value, effect
Toleration = tuple[str, str, str, str]  # key, operator ("Equal" | "Exists"), value, effect ("" = any)

TOLERATE_PREFER_NO_SCHEDULE: Toleration = ("", "Exists", "", PREFER_NO_SCHEDULE)

# Taints a node carries while it starts; a Karpenter node that is not initialized yet will lose them.
EPHEMERAL_TAINTS: frozenset[Taint] = frozenset(
    {
        ("node.kubernetes.io/not-ready", "", NO_SCHEDULE),
        ("node.kubernetes.io/not-ready", "", NO_EXECUTE),
        ("node.kubernetes.io/unreachable", "", NO_SCHEDULE),
        ("node.cloudprovider.kubernetes.io/uninitialized", "true", NO_SCHEDULE),
        ("karpenter.sh/unregistered", "", NO_EXECUTE),
    }
)
EPHEMERAL_TAINT_PREFIXES = ("readiness.k8s.io/",)


def parse_taints(raw: Iterable[Mapping[str, Any]] | None) -> tuple[Taint, ...]:
    return tuple((str(t.get("key", "")), str(t.get("value") or ""), str(t.get("effect", ""))) for t in raw or ())


def parse_tolerations(raw: Iterable[Mapping[str, Any]] | None) -> tuple[Toleration, ...]:
    return tuple(
        (
            str(t.get("key") or ""),
            str(t.get("operator") or "Equal"),
            str(t.get("value") or ""),
            str(t.get("effect") or ""),
        )
        for t in raw or ()
    )


def is_ephemeral(taint: Taint) -> bool:
    key, _, _ = taint
    return taint in EPHEMERAL_TAINTS or key.startswith(EPHEMERAL_TAINT_PREFIXES)


def tolerates(toleration: Toleration, taint: Taint) -> bool:
    """One toleration against one taint (``v1.Toleration.ToleratesTaint``)."""
    key, operator, value, effect = toleration
    taint_key, taint_value, taint_effect = taint
    if effect and effect != taint_effect:
        return False
    if key and key != taint_key:
        return False
    if operator == "Exists":
        return True
    return operator in ("Equal", "") and value == taint_value


def untolerated(taints: Iterable[Taint], tolerations: tuple[Toleration, ...]) -> Taint | None:
    """The first taint no toleration tolerates, or None. Every effect counts, PreferNoSchedule included:
    Karpenter treats preferences as requirements until relaxation adds a toleration for them."""
    for taint in taints:
        if not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None


def describe(taint: Taint) -> str:
    key, value, effect = taint
    return f"{key}={value}:{effect}" if value else f"{key}:{effect}"
