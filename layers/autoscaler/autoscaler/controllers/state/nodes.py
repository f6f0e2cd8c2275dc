"""Nodes as the controllers read them (JSON dicts, as the API server serves them; read them through
``kube.objects.Node``), and how a NodeClaim finds its Node: by ``spec.providerID``, as Karpenter matches them.
Pure."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.kube.objects import Node

KubeObject = Mapping[str, Any]

DISRUPTED_TAINT: Mapping[str, str] = {"key": wk.TAINT_DISRUPTED, "effect": "NoSchedule"}


def taints_with_disrupted(node: KubeObject | Node) -> list[dict[str, Any]] | None:
    """The node's taints with ``karpenter.sh/disrupted:NoSchedule`` added (replacing the same key with another
    effect), or None when it is already there."""
    view = Node.of(node)
    if view.has_taint(wk.TAINT_DISRUPTED, "NoSchedule"):
        return None
    return [*(dict(t) for t in view.taints if t.get("key") != wk.TAINT_DISRUPTED), dict(DISRUPTED_TAINT)]


def nodes_by_provider_id(nodes: Iterable[KubeObject]) -> dict[str, KubeObject]:
    """Nodes keyed by ``spec.providerID`` (Karpenter matches Nodes to NodeClaims by it; unregistered nodes
    without one are left out)."""
    return {pid: node for node in nodes if (pid := Node(node).provider_id)}


def node_of(claim: NodeClaim, by_provider: Mapping[str, KubeObject]) -> KubeObject | None:
    """The NodeClaim's Node among ``nodes_by_provider_id(...)``, or None before it registers."""
    provider_id = claim.status.provider_id if claim.status else None
    return by_provider.get(provider_id) if provider_id else None
