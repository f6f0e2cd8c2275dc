"""Nodes and NodeClaims in termination: which objects the sweep must advance (a NodeClaim and its Node, matched
by provider ID), and the Node details the termination steps read. Pure."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.controllers.state.nodes import nodes_by_provider_id
from autoscaler.controllers.termination.deadline import is_deleting
from autoscaler.kube.objects import Node

KubeObject = Mapping[str, Any]

EXCLUDE_FROM_LOAD_BALANCERS_VALUE = "karpenter"


def has_termination_finalizer(finalizers: Iterable[str] | None) -> bool:
    return wk.FINALIZER_TERMINATION in (finalizers or ())


def is_excluded_from_load_balancers(node: KubeObject | Node) -> bool:
    return Node.of(node).labels.get(wk.LABEL_EXCLUDE_FROM_LOAD_BALANCERS) == EXCLUDE_FROM_LOAD_BALANCERS_VALUE


@dataclass(frozen=True)
class TerminatingPair:
    """One unit of termination: a NodeClaim and its Node, either of which may be missing."""

    nodeclaim: NodeClaim | None
    node: KubeObject | None

    @property
    def name(self) -> str:
        return self.nodeclaim.name if self.nodeclaim is not None else Node(self.node or {}).name

    @property
    def deleted_at(self) -> str:
        """When its termination began (RFC 3339 text, which sorts in time order), for oldest-first sweeps."""
        claim_deleted = self.nodeclaim.metadata.deletion_timestamp if self.nodeclaim is not None else None
        return claim_deleted or Node(self.node or {}).deletion_timestamp or ""


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
            nodeclaim_of_node[Node(node).name] = nodeclaim
        if is_deleting(nodeclaim) and has_termination_finalizer(nodeclaim.metadata.finalizers):
            pairs.append(TerminatingPair(nodeclaim, node))
            if node is not None:
                claimed.add(Node(node).name)
    for node in nodes:
        view = Node(node)
        if view.name in claimed or not view.deleting or not has_termination_finalizer(view.finalizers):
            continue
        pairs.append(TerminatingPair(nodeclaim_of_node.get(view.name), node))
    return sorted(pairs, key=lambda pair: pair.deleted_at)
