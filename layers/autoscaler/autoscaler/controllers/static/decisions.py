"""What a static NodePool (``spec.replicas``, the StaticCapacity gate) needs: more NodeClaims, fewer, or none. Pure.

Karpenter's static provisioning and deprovisioning controllers, from one read of the cluster:

- the pool's NodeClaims are *running* (not being deleted and not a candidate of a disruption command), *pending
  disruption* (a candidate whose replacement is on its way) or *deleting*;
- scale up while running plus pending disruption is below ``replicas`` (a drifted node being replaced is still
  counted, so its replacement is not doubled), by at most what ``limits.nodes`` leaves over every NodeClaim of
  the pool (deleting ones included: their instances still run) — and only while the pool is Ready;
- scale down while running is above ``replicas`` (pending disruption not counted, so a replacement in flight
  never makes the pool look over-provisioned), removing first the NodeClaims not launched yet, then empty nodes
  (only DaemonSet or the node's own pods, none with ``karpenter.sh/do-not-disrupt``), then the rest cheapest to
  disrupt first (Karpenter's rescheduling cost times lifetime remaining), those with a do-not-disrupt pod last.

NodeClaims created for a static pool carry no instance type choice: the pool's requirements only, the cloud
provider picks the instance at launch (as Karpenter lets ``cloudprovider.Create`` do).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from autoscaler.apis.duration import parse_nillable
from autoscaler.apis.resources import parse_resources
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.apis.v1.nodepool import NodePool
from autoscaler.clock import parse_time
from autoscaler.controllers.orchestration import in_command
from autoscaler.controllers.state.cost import disruption_cost
from autoscaler.controllers.state.nodeclaims import do_not_disrupt
from autoscaler.controllers.state.nodes import KubeObject, node_of, nodes_by_provider_id
from autoscaler.controllers.state.pods import is_reschedulable
from autoscaler.kube.objects import Node
from autoscaler.scheduling import NewNodeClaim
from autoscaler.scheduling.nodeclaim import nodeclass_label
from autoscaler.scheduling.requirements import Requirements

NODES = "nodes"
OVERPROVISIONED = "overprovisioned"  # Karpenter's termination reason for a surplus static NodeClaim


def is_static(nodepool: NodePool) -> bool:
    return nodepool.spec.replicas is not None


def node_limit(nodepool: NodePool) -> float:
    """``limits.nodes`` (the one limit a static pool may set), unbounded when absent."""
    limits = parse_resources(nodepool.spec.limits)
    return limits.get(NODES, math.inf)


def _of_pool(claim: NodeClaim, pool: str) -> bool:
    return (claim.metadata.labels or {}).get(wk.LABEL_NODEPOOL) == pool


@dataclass(frozen=True)
class Counts:
    running: int
    pending_disruption: int
    deleting: int

    @property
    def total(self) -> int:
        return self.running + self.pending_disruption + self.deleting


def node_counts(nodepool: NodePool, claims: Sequence[NodeClaim]) -> Counts:
    running = pending = deleting = 0
    for claim in claims:
        if not _of_pool(claim, nodepool.name):
            continue
        if claim.metadata.deletion_timestamp:
            deleting += 1
        elif in_command(claim):
            pending += 1
        else:
            running += 1
    return Counts(running, pending, deleting)


def room_under_limit(nodepool: NodePool, found: Counts, wanted: int) -> int:
    """How many of ``wanted`` new NodeClaims ``limits.nodes`` lets the pool add now (Karpenter's reservation)."""
    left = node_limit(nodepool) - found.total
    return max(0, min(wanted, int(left) if left != math.inf else wanted))


@dataclass(frozen=True)
class Surplus:
    claim: NodeClaim
    why: str  # "not launched", "empty" or its disruption cost


@dataclass
class StaticDecision:
    nodepool: str
    replicas: int
    counts: Counts
    create: int = 0
    remove: list[Surplus] = field(default_factory=list)
    held: str | None = None  # why the pool does not get all it needs now (limit, not Ready)

    def summary(self) -> dict[str, object]:
        return {
            "replicas": self.replicas,
            "running": self.counts.running,
            "pending_disruption": self.counts.pending_disruption,
            "create": self.create,
            "remove": {s.claim.name: s.why for s in self.remove},
            **({"held": self.held} if self.held else {}),
        }


def decide(  # noqa: PLR0917 - one pool against the pass's read of the cluster
    nodepool: NodePool,
    claims: Sequence[NodeClaim],
    nodes: Sequence[KubeObject],
    pods_by_node: Mapping[str, Sequence[KubeObject]],
    now: datetime,
    not_ready: str | None = None,
) -> StaticDecision:
    """What ``nodepool`` (static) needs now; ``not_ready`` is why it is not Ready (it then does not scale up)."""
    replicas = nodepool.spec.replicas or 0
    found = node_counts(nodepool, claims)
    decision = StaticDecision(nodepool.name, replicas, found)
    if found.running > replicas:
        decision.remove = surplus(nodepool, claims, nodes, pods_by_node, now, found.running - replicas)
        return decision
    missing = replicas - found.running - found.pending_disruption
    if missing <= 0:
        return decision
    if not_ready is not None:
        decision.held = f"the NodePool is not ready ({not_ready})"
        return decision
    decision.create = room_under_limit(nodepool, found, missing)
    if decision.create < missing:
        decision.held = f"limits.nodes {nodepool.spec.limits and nodepool.spec.limits.get(NODES)} reached"
    return decision


def surplus(  # noqa: PLR0917
    nodepool: NodePool,
    claims: Sequence[NodeClaim],
    nodes: Sequence[KubeObject],
    pods_by_node: Mapping[str, Sequence[KubeObject]],
    now: datetime,
    count: int,
) -> list[Surplus]:
    """The ``count`` running NodeClaims of the pool to remove, least disruptive first."""
    by_provider = nodes_by_provider_id(nodes)
    unlaunched: list[Surplus] = []
    empty: list[Surplus] = []
    ranked: list[tuple[bool, float, str, NodeClaim]] = []
    for claim in claims:
        if not _of_pool(claim, nodepool.name) or claim.metadata.deletion_timestamp or in_command(claim):
            continue
        node = node_of(claim, by_provider)
        if not (claim.status and claim.status.provider_id) or node is None:
            # Not launched, or launched without a Node yet: no pod can be on it.
            unlaunched.append(Surplus(claim, "not launched" if node is None else "no node yet"))
            continue
        pods = list(pods_by_node.get(Node(node).name, ()))
        pinned = do_not_disrupt(pods=pods) is not None
        moving = [p for p in pods if is_reschedulable(p)]
        if not moving and not pinned:
            empty.append(Surplus(claim, "empty"))
            continue
        created = parse_time(claim.metadata.creation_timestamp) or now
        lifetime = parse_nillable(claim.spec.expire_after)
        ranked.append((pinned, disruption_cost(moving, created, lifetime, now), claim.name, claim))
    ranked.sort(key=lambda entry: entry[:3])
    rest = [
        Surplus(claim, f"disruption cost {cost:.2f}" + (" (do-not-disrupt)" if pinned else ""))
        for pinned, cost, _, claim in ranked
    ]
    ordered = [*sorted(unlaunched, key=lambda s: s.claim.name), *sorted(empty, key=lambda s: s.claim.name), *rest]
    return ordered[:count]


def static_nodeclaim(nodepool: NodePool) -> NewNodeClaim:
    """A static pool's next NodeClaim as a scheduling decision: its template's requirements and labels (the pool's
    and its class's label among them), no pods, no instance type options (``provisioning.nodeclaims.to_nodeclaim``
    turns it into the NodeClaim to create)."""
    template = nodepool.spec.template
    ref = template.spec.node_class_ref
    labels = {
        **((template.metadata.labels if template.metadata else None) or {}),
        wk.LABEL_NODEPOOL: nodepool.name,
        nodeclass_label(ref.group, ref.kind): ref.name,
    }
    requirements = Requirements.from_selector(r.to_dict() for r in template.spec.requirements)
    return NewNodeClaim(
        nodepool=nodepool.name,
        hostname=f"{nodepool.name}-static",
        requirements=requirements.merged(Requirements.from_labels(labels)),
        requests={},
        pods=(),
        labels=labels,
        taints=(),
        options=(),
    )
