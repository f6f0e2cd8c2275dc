"""``consolidationPolicy: Balanced``: a consolidation move only when its savings are worth its disruption. Pure.

As Karpenter v1.14 scores a move, per Balanced NodePool it takes: the share of the NodePool's cost per hour the
move saves (savings fraction) over the share of the NodePool's disruption cost it causes (disruption fraction).
A node's disruption cost is 1 (draining it at all) plus each reschedulable pod's eviction cost (at least 0); the
NodePool's total sums it over all its nodes, candidates or not. The move is approved when the score is at least
1/k with k = 2: a move may take twice its share of disruption for its share of savings. A move that takes nodes
of several NodePools splits its savings among them by what their candidates cost, and every Balanced NodePool
among them must approve. Other policies are not scored. Emptiness is not scored either (an empty node saves its
whole price at the base cost).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.cloudprovider.types import InstanceType
from autoscaler.controllers.disruption.candidates import Candidate, price_of
from autoscaler.controllers.state.cost import eviction_cost
from autoscaler.controllers.state.nodes import node_of, nodes_by_provider_id
from autoscaler.controllers.state.pods import is_reschedulable
from autoscaler.kube.objects import Node

BALANCED: str = "Balanced"
BALANCED_K = 2  # Karpenter's BalancedK
NODE_BASE_COST = 1.0  # Karpenter's PerNodeBaseDisruptionCost


def reschedule_cost(pods: Iterable[Mapping[str, Any]]) -> float:
    """A node's disruption cost for scoring: 1 plus its reschedulable pods' eviction costs, each at least 0."""
    return NODE_BASE_COST + sum(max(0.0, eviction_cost(p)) for p in pods)


@dataclass(frozen=True)
class PoolTotals:
    cost: float  # $/hour of all the NodePool's nodes whose price is known
    disruption: float  # the disruption cost of all its nodes


@dataclass(frozen=True)
class Score:
    savings_fraction: float
    disruption_fraction: float
    k: int = BALANCED_K

    @property
    def value(self) -> float:
        if self.savings_fraction <= 0:
            return 0.0
        if self.disruption_fraction == 0:
            return math.inf
        return self.savings_fraction / self.disruption_fraction

    @property
    def threshold(self) -> float:
        return 1.0 / self.k

    @property
    def approved(self) -> bool:
        return self.value >= self.threshold

    def text(self) -> str:
        """Karpenter's wording: ``score 0.62 >= threshold 0.50 (k: 2, savings 4.1%, disruption 6.6%)``."""
        op = ">=" if self.approved else "<"
        return (
            f"score {self.value:.2f} {op} threshold {self.threshold:.2f} (k: {self.k}, "
            f"savings {self.savings_fraction * 100:.1f}%, disruption {self.disruption_fraction * 100:.1f}%)"
        )


def score(savings: float, disruption: float, totals: PoolTotals | None) -> Score | None:
    """The move's score in a NodePool with ``totals``; None when there is nothing to measure it against."""
    if totals is None or totals.cost <= 0 or totals.disruption <= 0:
        return None
    return Score(savings / totals.cost, disruption / totals.disruption)


def is_balanced(candidate: Candidate) -> bool:
    return candidate.nodepool.spec.disruption.consolidation_policy == BALANCED


def evaluate(
    candidates: Sequence[Candidate], savings: float | None, totals: Mapping[str, PoolTotals]
) -> dict[str, Score]:
    """Each Balanced NodePool's score of a move taking ``candidates`` and saving ``savings`` $/hour."""
    by_pool: dict[str, list[Candidate]] = {}
    for candidate in candidates:
        if is_balanced(candidate):
            by_pool.setdefault(candidate.nodepool.name, []).append(candidate)
    if not by_pool:
        return {}
    source = sum(c.price or 0.0 for c in candidates)
    several = len({c.nodepool.name for c in candidates}) > 1
    scores: dict[str, Score] = {}
    for pool, mine in by_pool.items():
        share = savings or 0.0
        if several and source > 0:
            share *= sum(c.price or 0.0 for c in mine) / source
        found = score(share, sum(reschedule_cost(c.pods) for c in mine), totals.get(pool))
        scores[pool] = found if found is not None else Score(1.0, 0.0)  # nothing to weigh against: approve
    return scores


def rejection(scores: Mapping[str, Score]) -> str | None:
    """Why a move with these scores is not taken, or None when every Balanced NodePool approves."""
    refused = [f"NodePool {pool} (Balanced): {s.text()}" for pool, s in sorted(scores.items()) if not s.approved]
    return "; ".join(refused) or None


def savings_ratio(candidate: Candidate) -> float:
    """Karpenter's ``SavingsRatio``: the candidate's price over its disruption cost (0 when its price is unknown)."""
    return (candidate.price or 0.0) / reschedule_cost(candidate.pods)


def best_case(candidate: Candidate, totals: Mapping[str, PoolTotals]) -> Score | None:
    """The candidate's score if it were simply deleted: the most any move of it can score (None: not scored)."""
    if not is_balanced(candidate) or candidate.price is None:
        return None
    return score(candidate.price, reschedule_cost(candidate.pods), totals.get(candidate.nodepool.name))


def pool_totals(
    claims: Sequence[NodeClaim],
    nodes: Sequence[Mapping[str, Any]],
    pods_by_node: Mapping[str, Sequence[Mapping[str, Any]]],
    instance_types: Mapping[str, Sequence[InstanceType]],
) -> dict[str, PoolTotals]:
    """Per NodePool, over all its NodeClaims with a Node: their prices (where known) and disruption costs."""
    by_provider = nodes_by_provider_id(nodes)
    cost: dict[str, float] = {}
    disruption: dict[str, float] = {}
    for claim in claims:
        node = node_of(claim, by_provider)
        labels = claim.metadata.labels or {}
        pool = labels.get(wk.LABEL_NODEPOOL)
        if node is None or pool is None:
            continue
        offered = next((t for t in instance_types.get(pool, ()) if t.name == labels.get(wk.LABEL_INSTANCE_TYPE)), None)
        price = price_of(offered, claim)
        pods = [p for p in pods_by_node.get(Node(node).name, ()) if is_reschedulable(p)]
        cost[pool] = cost.get(pool, 0.0) + (price or 0.0)
        disruption[pool] = disruption.get(pool, 0.0) + reschedule_cost(pods)
    return {pool: PoolTotals(cost[pool], disruption[pool]) for pool in cost}
