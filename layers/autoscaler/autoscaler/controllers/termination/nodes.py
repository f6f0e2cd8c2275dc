"""Nodes and NodeClaims in termination: which objects the sweep must advance, and how a Node is matched
to its NodeClaim. Pure; garbage collection reads the same pairing."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.controllers.termination.deadline import is_deleting

KubeObject = Mapping[str, Any]

DISRUPTED_TAINT: Mapping[str, str] = {"key": wk.TAINT_DISRUPTED, "effect": "NoSchedule"}
EXCLUDE_FROM_LOAD_BALANCERS_VALUE = "karpenter"


def node_name(node: KubeObject) -> str:
    return str((node.get("metadata") or {}).get("name", ""))


def node_provider_id(node: KubeObject) -> str:
    return str((node.get("spec") or {}).get("providerID") or "")


def node_finalizers(node: KubeObject) -> list[str]:
    return list((node.get("metadata") or {}).get("finalizers") or ())


def node_is_deleting(node: KubeObject) -> bool:
    return bool((node.get("metadata") or {}).get("deletionTimestamp"))


def node_is_ready(node: KubeObject) -> bool:
    conditions = (node.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def has_termination_finalizer(finalizers: Iterable[str] | None) -> bool:
    return wk.FINALIZER_TERMINATION in (finalizers or ())


def taints_with_disrupted(node: KubeObject) -> list[dict[str, Any]] | None:
    """The node's taints with ``karpenter.sh/disrupted:NoSchedule`` added (replacing the same key with another
    effect), or None when it is already there."""
    taints = [dict(t) for t in (node.get("spec") or {}).get("taints") or ()]
    if any(t.get("key") == wk.TAINT_DISRUPTED and t.get("effect") == "NoSchedule" for t in taints):
        return None
    return [*(t for t in taints if t.get("key") != wk.TAINT_DISRUPTED), dict(DISRUPTED_TAINT)]


def is_excluded_from_load_balancers(node: KubeObject) -> bool:
    labels = (node.get("metadata") or {}).get("labels") or {}
    return labels.get(wk.LABEL_EXCLUDE_FROM_LOAD_BALANCERS) == EXCLUDE_FROM_LOAD_BALANCERS_VALUE


@dataclass(frozen=True)
class TerminatingPair:
    """One unit of termination: a NodeClaim and its Node, either of which may be missing."""

    nodeclaim: NodeClaim | None
    node: KubeObject | None

    @property
    def name(self) -> str:
        return self.nodeclaim.name if self.nodeclaim is not None else node_name(self.node or {})

    @property
    def deleted_at(self) -> str:
        """When its termination began (RFC 3339 text, which sorts in time order), for oldest-first sweeps."""
        claim_deleted = self.nodeclaim.metadata.deletion_timestamp if self.nodeclaim is not None else None
        return claim_deleted or (self.node or {}).get("metadata", {}).get("deletionTimestamp") or ""


def nodes_by_provider_id(nodes: Iterable[KubeObject]) -> dict[str, KubeObject]:
    """Nodes keyed by ``spec.providerID`` (Karpenter matches Nodes to NodeClaims by it; unregistered nodes
    without one are left out)."""
    return {pid: node for node in nodes if (pid := node_provider_id(node))}


def terminating_pairs(nodeclaims: Sequence[NodeClaim], nodes: Sequence[KubeObject]) -> list[TerminatingPair]:
    """Every pair the termination sweep must advance, oldest deletion first: NodeClaims being deleted that
    still hold the ``karpenter.sh/termination`` finalizer, and Nodes being deleted that hold it (with their
    NodeClaim, deleted or not, so that deleting a Node deletes its NodeClaim)."""
    by_provider = nodes_by_provider_id(nodes)
    pairs: list[TerminatingPair] = []
    claimed: set[str] = set()
    nodeclaim_of_node: dict[str, NodeClaim] = {}
    for nodeclaim in nodeclaims:
        provider_id = (nodeclaim.status.provider_id if nodeclaim.status else None) or ""
        node = by_provider.get(provider_id) if provider_id else None
        if node is not None:
            nodeclaim_of_node[node_name(node)] = nodeclaim
        if is_deleting(nodeclaim) and has_termination_finalizer(nodeclaim.metadata.finalizers):
            pairs.append(TerminatingPair(nodeclaim, node))
            if node is not None:
                claimed.add(node_name(node))
    for node in nodes:
        name = node_name(node)
        if name in claimed or not node_is_deleting(node) or not has_termination_finalizer(node_finalizers(node)):
            continue
        pairs.append(TerminatingPair(nodeclaim_of_node.get(name), node))
    return sorted(pairs, key=lambda pair: pair.deleted_at)
