"""Which nodes disruption may consider, and why the others may not (Karpenter's candidate rules). Pure.

A candidate is a NodeClaim with a Node, of a NodePool that exists, initialized, not being deleted, not in a
disruption command already, and without ``karpenter.sh/do-not-disrupt`` on its Node or NodeClaim. Its pods
must all be evictable: none annotated ``karpenter.sh/do-not-disrupt`` and none whose PodDisruptionBudget allows
no disruption now, except for drift of a NodeClaim with a ``terminationGracePeriod`` (an eventual disruption:
the grace period bounds how long such pods can hold the node, as in Karpenter v1).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from autoscaler.apis.duration import parse_nillable
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.conditions import get_condition, is_true
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.apis.v1.nodepool import NodePool
from autoscaler.clock import parse_time
from autoscaler.cloudprovider.types import InstanceType
from autoscaler.controllers.disruption.conditions import (
    CONSOLIDATABLE,
    DRIFTED,
    expires_at,
)
from autoscaler.controllers.disruption.pdb import DisruptionBudgets
from autoscaler.controllers.orchestration import in_command
from autoscaler.controllers.orchestration.record import replaces
from autoscaler.controllers.state.cost import disruption_cost
from autoscaler.controllers.state.nodeclaims import do_not_disrupt
from autoscaler.controllers.state.nodes import node_of, nodes_by_provider_id
from autoscaler.controllers.state.pods import is_reschedulable
from autoscaler.kube.objects import Node

KubeObject = Mapping[str, Any]


@dataclass
class Candidate:
    claim: NodeClaim
    node: KubeObject
    nodepool: NodePool
    pods: list[KubeObject]  # the pods that need a place elsewhere
    instance_type: InstanceType | None  # None when the NodePool no longer offers it
    price: float | None  # what it costs now per hour, None when unknown
    cost: float  # Karpenter's disruption cost: cheaper to disrupt first
    blocked_pods: str | None = None  # why its pods cannot be evicted now (drift under a grace period ignores it)
    buffer_pods: Sequence[KubeObject] = ()  # CapacityBuffers' virtual pods it holds room for (demand, not evicted)

    @property
    def name(self) -> str:
        return self.claim.name

    @property
    def node_name(self) -> str:
        return Node(self.node).name

    @property
    def capacity_type(self) -> str:
        return (self.claim.metadata.labels or {}).get(wk.LABEL_CAPACITY_TYPE, "")

    @property
    def instance_type_name(self) -> str:
        return (self.claim.metadata.labels or {}).get(wk.LABEL_INSTANCE_TYPE, "")

    @property
    def drifted_since(self) -> str:
        condition = get_condition(self.claim.status.conditions if self.claim.status else None, DRIFTED)
        return (condition.last_transition_time or "") if condition else ""

    def has_condition(self, condition: str) -> bool:
        return is_true(self.claim.status.conditions if self.claim.status else None, condition)

    @property
    def consolidatable(self) -> bool:
        return self.has_condition(CONSOLIDATABLE)

    @property
    def empty(self) -> bool:
        """No pods and no buffer room: a node kept for a CapacityBuffer is not empty (as in Karpenter)."""
        return not self.pods and not self.buffer_pods


@dataclass
class Candidates:
    """Every node disruption looked at: the candidates, and for the others why not (node name -> reason)."""

    candidates: list[Candidate] = field(default_factory=list)
    ineligible: dict[str, str] = field(default_factory=dict)


def price_of(instance_type: InstanceType | None, claim: NodeClaim) -> float | None:
    if instance_type is None:
        return None
    labels = claim.metadata.labels or {}
    zone, capacity_type = labels.get(wk.LABEL_ZONE), labels.get(wk.LABEL_CAPACITY_TYPE)
    prices = [
        o.price
        for o in instance_type.offerings
        if (zone is None or o.zone == zone) and (capacity_type is None or o.capacity_type == capacity_type)
    ]
    return min(prices) if prices else None


def _pod_blocker(pods: Sequence[KubeObject], budgets: DisruptionBudgets) -> str | None:
    return do_not_disrupt(pods=pods) or budgets.blocking_any(pods)


def _node_blocker(
    claim: NodeClaim, node: Node | None, nodepools: Mapping[str, NodePool], existing: frozenset[str]
) -> str | None:
    pool = (claim.metadata.labels or {}).get(wk.LABEL_NODEPOOL, "")
    if node is None:
        return "no node has registered yet"
    if pool not in nodepools:
        return f"NodePool {pool!r} does not exist"
    if claim.metadata.deletion_timestamp or node.deleting:
        return "being deleted"
    if in_command(claim):
        return "already being disrupted"
    if not claim.initialized:
        return "not initialized"
    replaced = [n for n in replaces(claim) if n in existing]
    if replaced:  # it looks empty only because their pods have not moved yet (Karpenter: "nominated")
        return f"it replaces {', '.join(replaced)}, whose pods are still to move here"
    return do_not_disrupt(node=node, claim=claim)


def find_candidates(  # noqa: PLR0917 - the pass's read of the cluster, each list once
    nodeclaims: Sequence[NodeClaim],
    nodes: Sequence[KubeObject],
    pods_by_node: Mapping[str, Sequence[KubeObject]],
    nodepools: Mapping[str, NodePool],
    instance_types: Mapping[str, Sequence[InstanceType]],
    budgets: DisruptionBudgets,
    now: datetime,
) -> Candidates:
    found = Candidates()
    by_provider = nodes_by_provider_id(nodes)
    existing = frozenset(c.name for c in nodeclaims)
    for claim in nodeclaims:
        node = node_of(claim, by_provider)
        view = Node(node) if node is not None else None
        label = view.name if view is not None else claim.name
        blocker = _node_blocker(claim, view, nodepools, existing)
        if blocker is not None or node is None:
            found.ineligible[label] = f"NodeClaim {claim.name}: {blocker}"
            continue
        pool = nodepools[(claim.metadata.labels or {})[wk.LABEL_NODEPOOL]]
        pods = [p for p in pods_by_node.get(label, ()) if is_reschedulable(p)]
        type_name = (claim.metadata.labels or {}).get(wk.LABEL_INSTANCE_TYPE)
        instance_type = next((t for t in instance_types.get(pool.name, ()) if t.name == type_name), None)
        created = parse_time(claim.metadata.creation_timestamp) or now
        expiry = expires_at(claim, pool)
        lifetime = parse_nillable(claim.spec.expire_after) if expiry else None
        found.candidates.append(
            Candidate(
                claim=claim,
                node=node,
                nodepool=pool,
                pods=pods,
                instance_type=instance_type,
                price=price_of(instance_type, claim),
                cost=disruption_cost(pods, created, lifetime, now),
                blocked_pods=_pod_blocker(pods, budgets),
            )
        )
    return found
