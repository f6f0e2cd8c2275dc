"""Nodes and NodeClaims in termination: which objects the sweep must advance (a NodeClaim and its Node, matched
by provider ID), and the Node details the termination steps read. Pure."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.controllers.state.nodes import node_is_deleting, node_name, nodes_by_provider_id
from autoscaler.controllers.termination.deadline import is_deleting

KubeObject = Mapping[str, Any]

EXCLUDE_FROM_LOAD_BALANCERS_VALUE = "karpenter"


def node_finalizers(node: KubeObject) -> list[str]:
    return list((node.get("metadata") or {}).get("finalizers") or ())


def has_termination_finalizer(finalizers: Iterable[str] | None) -> bool:
    return wk.FINALIZER_TERMINATION in (finalizers or ())


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
