"""NodePool disruption budgets: how many of a pool's nodes one disruption reason may take down right now.

Karpenter evaluates every budget that covers the reason and is inside its schedule window, and the most
restrictive one wins; nodes already being disrupted use up that allowance. Disruption's methods spend them when
they decide; the orchestrator spends them before deleting a candidate whose policy checks them then.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from croniter import croniter

from autoscaler.apis.duration import parse_duration
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.apis.v1.nodepool import Budget, NodePool, cron_expression
from autoscaler.clock import as_utc
from autoscaler.controllers.orchestration.record import is_marked
from autoscaler.controllers.state.nodes import KubeObject, node_of, nodes_by_provider_id
from autoscaler.kube.objects import Node

DRIFTED = "Drifted"
EMPTY = "Empty"
UNDERUTILIZED = "Underutilized"


def budget_active(budget: Budget, now: datetime) -> bool:
    """Whether ``now`` falls in ``[firing, firing + duration)`` for some firing of the budget's schedule.

    Like Karpenter, this looks for a firing strictly after ``now - duration`` and no later than ``now``, so
    overlapping windows simply extend each other and the instant the window closes is already outside it. A
    budget without a schedule always applies; a schedule without a duration (rejected by validation) never does.
    """
    if budget.schedule is None:
        return True
    now = as_utc(now)  # schedules are UTC
    window = parse_duration(budget.duration) if budget.duration is not None else None
    if not window:
        return False
    firing: datetime = croniter(cron_expression(budget.schedule), now - window).get_next(datetime)
    return firing <= now


def budget_nodes(budget: Budget, total: int) -> int:
    """The budget's node count for a pool of ``total`` nodes; a percentage rounds up, so a small pool with a
    non-zero percentage can still move one node at a time rather than being blocked outright."""
    nodes = budget.nodes
    if nodes.endswith("%"):
        return math.ceil(int(nodes[:-1]) * total / 100)
    return int(nodes)


@dataclass(frozen=True)
class BudgetVerdict:
    """How many more of a pool's nodes may be disrupted for one reason, and why none may when that is so.

    ``limit`` is the smallest active budget's node count, or None when no active budget covers the reason;
    then ``allowed`` is ``total`` (Karpenter's "unbounded", capped at what could ever be disrupted).
    ``blocking`` is set only when a budget leaves no room (``allowed == 0``).
    """

    allowed: int
    limit: int | None
    disrupting: int
    blocking: str | None


def applies(budget: Budget, reason: str) -> bool:
    """Budgets without reasons cover every reason (an empty list is read the same way: fail closed)."""
    return not budget.reasons or reason in budget.reasons


def allowed_disruptions(nodepool: NodePool, reason: str, total: int, disrupting: int, now: datetime) -> BudgetVerdict:
    """Apply the pool's budgets for ``reason``: ``total`` counts the pool's nodes, ``disrupting`` those of them
    already being deleted or NotReady, both counted by the caller."""
    active = [b for b in nodepool.spec.disruption.budgets if applies(b, reason) and budget_active(b, now)]
    if not active:
        return BudgetVerdict(allowed=total, limit=None, disrupting=disrupting, blocking=None)
    tightest = _tightest(active, total)
    limit = budget_nodes(tightest, total)
    allowed = max(limit - disrupting, 0)
    blocking = _blocking_sentence(tightest, limit, disrupting) if allowed == 0 else None
    return BudgetVerdict(allowed=allowed, limit=limit, disrupting=disrupting, blocking=blocking)


def _tightest(budgets: Sequence[Budget], total: int) -> Budget:
    """The first of the budgets with the smallest node count (min keeps the first on ties)."""
    return min(budgets, key=lambda b: budget_nodes(b, total))


def _blocking_sentence(budget: Budget, limit: int, disrupting: int) -> str:
    amount = f"{budget.nodes} ({_nodes(limit)})" if budget.nodes.endswith("%") else _nodes(limit)
    sentence = f"budget of {amount}"
    if budget.reasons:
        sentence += f" for {', '.join(budget.reasons)}"
    if budget.schedule is not None:
        sentence += f" active in window '{budget.schedule}' for {budget.duration}"
    if limit > 0:
        sentence += f" is used up by {_nodes(disrupting)} already disrupting"
    return sentence


def _nodes(count: int) -> str:
    return f"{count} node" if count == 1 else f"{count} nodes"


def counts(nodeclaims: Sequence[NodeClaim], nodes: Sequence[KubeObject]) -> tuple[dict[str, int], dict[str, int]]:
    """Per NodePool: its initialized nodes (budgets are a share of them), and those already disrupting (being
    deleted, marked by a command, or not Ready), which use up budget, as Karpenter counts them."""
    by_provider = nodes_by_provider_id(nodes)
    total: dict[str, int] = {}
    disrupting: dict[str, int] = {}
    for claim in nodeclaims:
        pool = (claim.metadata.labels or {}).get(wk.LABEL_NODEPOOL)
        raw = node_of(claim, by_provider)
        if pool is None or raw is None or not claim.initialized:
            continue
        total[pool] = total.get(pool, 0) + 1
        node = Node(raw)
        if claim.metadata.deletion_timestamp or node.deleting or is_marked(claim) or not node.ready:
            disrupting[pool] = disrupting.get(pool, 0) + 1
    return total, disrupting


class Budgets:
    """The allowance of each NodePool and reason for this pass, spent as candidates are taken."""

    def __init__(
        self, nodepools: Sequence[NodePool], total: dict[str, int], disrupting: dict[str, int], now: datetime
    ) -> None:
        self._pools = {p.name: p for p in nodepools}
        self._total, self._disrupting, self._now = total, disrupting, now
        self.verdicts: dict[tuple[str, str], BudgetVerdict] = {}
        self._left: dict[tuple[str, str], int] = {}

    def verdict(self, pool: str, reason: str) -> BudgetVerdict:
        key = (pool, reason)
        if key not in self.verdicts:
            verdict = allowed_disruptions(
                self._pools[pool], reason, self._total.get(pool, 0), self._disrupting.get(pool, 0), self._now
            )
            self.verdicts[key] = verdict
            self._left[key] = verdict.allowed
        return self.verdicts[key]

    def knows(self, pool: str) -> bool:
        return pool in self._pools

    def left(self, pool: str, reason: str) -> int:
        self.verdict(pool, reason)
        return self._left[(pool, reason)]

    def take(self, pool: str, reason: str) -> None:
        self._left[(pool, reason)] = self.left(pool, reason) - 1

    def why_not(self, pool: str, reason: str) -> str:
        verdict = self.verdict(pool, reason)
        return f"{reason} budget of NodePool {pool} allows no disruption now: {verdict.blocking or 'spent this pass'}"


__all__ = [
    "DRIFTED",
    "EMPTY",
    "UNDERUTILIZED",
    "BudgetVerdict",
    "Budgets",
    "allowed_disruptions",
    "applies",
    "budget_active",
    "budget_nodes",
    "counts",
]
