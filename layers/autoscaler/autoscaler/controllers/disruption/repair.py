"""Node repair (Karpenter's node health controller, behind the ``NodeRepair`` gate): which nodes to replace. Pure.

A node is unhealthy when one of the cloud provider's repair policies matches a condition of its Node (type and
status); it is due for repair once the condition has held for the policy's toleration, counted from the
condition's ``lastTransitionTime`` (with several matches, the one due first). Repair is forceful as Karpenter
does it: no disruption budget, ``karpenter.sh/do-not-disrupt`` or PodDisruptionBudget holds it (the NodeClaim is
deleted with its termination deadline set to now, so the drain does not wait). One guard: when more than 20%
of a NodePool's nodes (rounded up, as PDB percentages are) are unhealthy at once, none of them is repaired, since
replacing them is unlikely to help (a bad AMI, a zonal outage); a NodeClaim of no NodePool is weighed against
all the cluster's nodes instead.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.clock import parse_time
from autoscaler.cloudprovider.repair import RepairPolicy
from autoscaler.controllers.state.nodes import node_of, nodes_by_provider_id
from autoscaler.kube.objects import Node

KubeObject = Mapping[str, Any]
UNHEALTHY_PERCENT = 20  # Karpenter's allowedUnhealthyPercent
UNHEALTHY = "Unhealthy"  # the disruption reason (metrics: reason "unhealthy")


@dataclass(frozen=True)
class Unhealthy:
    condition_type: str
    since: datetime | None  # the condition's lastTransitionTime; None when unreadable
    due: datetime | None  # since + the policy's toleration


@dataclass(frozen=True)
class Repair:
    claim: NodeClaim
    node: KubeObject
    condition_type: str
    why: str = ""  # of a repair held back: why


@dataclass
class Repairs:
    due: list[Repair] = field(default_factory=list)
    held: list[Repair] = field(default_factory=list)  # due, but held by the unhealthy threshold
    waiting: dict[str, str] = field(default_factory=dict)  # node name -> unhealthy, within its toleration

    @property
    def blocked(self) -> dict[str, str]:
        """Node name -> why its repair is held."""
        return {Node(r.node).name: r.why for r in self.held}


def unhealthy(node: KubeObject, policies: Sequence[RepairPolicy]) -> Unhealthy | None:
    """The node's unhealthy condition due first, or None when no policy matches. A matching condition without a
    readable ``lastTransitionTime`` is unhealthy (it counts against the threshold) but never due, rather than
    repaired at once on a time nobody wrote; it comes after the dated ones."""
    found: list[Unhealthy] = []
    for policy in policies:
        condition = Node(node).condition(policy.condition_type)
        if condition is None or condition.get("status") != policy.condition_status:
            continue
        since = parse_time(condition.get("lastTransitionTime"))
        found.append(Unhealthy(policy.condition_type, since, since + policy.toleration if since else None))
    dated = [u for u in found if u.due is not None]
    if dated:
        return min(dated, key=lambda u: u.due or datetime.min)
    return found[0] if found else None


def allowed_unhealthy(total: int) -> int:
    """How many of ``total`` nodes may be unhealthy before repair stops: 20%, rounded up."""
    return math.ceil(total * UNHEALTHY_PERCENT / 100)


def decide(
    claims: Sequence[NodeClaim], nodes: Sequence[KubeObject], policies: Sequence[RepairPolicy], now: datetime
) -> Repairs:
    """The repairs due now among ``claims`` (not being deleted), and why the others wait."""
    found = Repairs()
    if not policies:
        return found
    by_pool: dict[str | None, list[bool]] = {}
    for each in nodes:
        pool = (Node(each).labels or {}).get(wk.LABEL_NODEPOOL)
        by_pool.setdefault(pool, []).append(unhealthy(each, policies) is not None)
    everyone = [flag for flags in by_pool.values() for flag in flags]
    by_provider = nodes_by_provider_id(nodes)
    for claim in claims:
        node = node_of(claim, by_provider)
        if node is None or claim.metadata.deletion_timestamp:
            continue
        name = Node(node).name
        sick = unhealthy(node, policies)
        if sick is None:
            continue
        if sick.due is None:
            found.waiting[name] = f"{sick.condition_type} is unhealthy but its lastTransitionTime is unreadable"
            continue
        if now < sick.due:
            found.waiting[name] = f"{sick.condition_type} unhealthy, tolerated until {sick.due.isoformat()}"
            continue
        pool = (claim.metadata.labels or {}).get(wk.LABEL_NODEPOOL)
        flags = by_pool.get(pool, []) if pool is not None else everyone
        if sum(flags) > allowed_unhealthy(len(flags)):
            where = "in the nodepool" if pool is not None else "in the cluster"
            why = f"more than {UNHEALTHY_PERCENT}% nodes are unhealthy {where}"
            found.held.append(Repair(claim, node, sick.condition_type, why))
            continue
        found.due.append(Repair(claim, node, sick.condition_type))
    return found
