"""Nodes as the controllers read them (JSON dicts, as the API server serves them), and how a NodeClaim finds its
Node: by ``spec.providerID``, as Karpenter matches them. Pure."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.nodeclaim import NodeClaim

KubeObject = Mapping[str, Any]

DISRUPTED_TAINT: Mapping[str, str] = {"key": wk.TAINT_DISRUPTED, "effect": "NoSchedule"}


def node_name(node: KubeObject) -> str:
    return str((node.get("metadata") or {}).get("name", ""))


def node_provider_id(node: KubeObject) -> str:
    return str((node.get("spec") or {}).get("providerID") or "")


def node_is_deleting(node: KubeObject) -> bool:
    return bool((node.get("metadata") or {}).get("deletionTimestamp"))


def node_is_ready(node: KubeObject) -> bool:
    conditions = (node.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def taints_with_disrupted(node: KubeObject) -> list[dict[str, Any]] | None:
    """The node's taints with ``karpenter.sh/disrupted:NoSchedule`` added (replacing the same key with another
    effect), or None when it is already there."""
    taints = [dict(t) for t in (node.get("spec") or {}).get("taints") or ()]
    if any(t.get("key") == wk.TAINT_DISRUPTED and t.get("effect") == "NoSchedule" for t in taints):
        return None
    return [*(t for t in taints if t.get("key") != wk.TAINT_DISRUPTED), dict(DISRUPTED_TAINT)]


def nodes_by_provider_id(nodes: Iterable[KubeObject]) -> dict[str, KubeObject]:
    """Nodes keyed by ``spec.providerID`` (Karpenter matches Nodes to NodeClaims by it; unregistered nodes
    without one are left out)."""
    return {pid: node for node in nodes if (pid := node_provider_id(node))}


def node_of(claim: NodeClaim, by_provider: Mapping[str, KubeObject]) -> KubeObject | None:
    """The NodeClaim's Node among ``nodes_by_provider_id(...)``, or None before it registers."""
    provider_id = claim.status.provider_id if claim.status else None
    return by_provider.get(provider_id) if provider_id else None
