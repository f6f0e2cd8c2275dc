"""The disruption methods, in Karpenter v1.0's order: drift, emptiness, multi-node and single-node
consolidation. Each looks at the candidates its reason allows and the budgets leave, and proposes at most one
:class:`Command`; the first method with a command wins the pass. Every candidate a method passes over gets the
reason in ``Decisions.blocked`` (the explanations of ``autoscaler plan --disruption`` and of events). Pure.

Static NodePools (``spec.replicas``) have their own drift method, before drift as in Karpenter's list: a drifted
static node is replaced by a fresh NodeClaim of its pool (no pod simulation), as many at once as the budget and
``limits.nodes`` allow and only while the pool is not scaling down. Drift, emptiness and consolidation skip them.

Drift differs from Karpenter in one way: a pass disrupts as many drifted nodes as the budget allows (their
pods simulated together), not one, because a pass runs every five minutes rather than every few seconds.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from autoscaler.controllers.disruption import balanced
from autoscaler.controllers.disruption.balanced import PoolTotals, Score
from autoscaler.controllers.disruption.candidates import Candidate
from autoscaler.controllers.disruption.conditions import DRIFTED as DRIFTED_CONDITION
from autoscaler.controllers.disruption.minimum_saving import below_minimum
from autoscaler.controllers.disruption.replacement import NotCheaper, cheaper_replacement
from autoscaler.controllers.disruption.rescheduling import Rescheduler, Rescheduling
from autoscaler.controllers.orchestration.budgets import DRIFTED, EMPTY, UNDERUTILIZED, Budgets, BudgetVerdict
from autoscaler.controllers.static import Counts, is_static, room_under_limit, static_nodeclaim
from autoscaler.scheduling import NewNodeClaim

WHEN_EMPTY_OR_UNDERUTILIZED = "WhenEmptyOrUnderutilized"
UNDERUTILIZED_POLICIES = (WHEN_EMPTY_OR_UNDERUTILIZED, balanced.BALANCED)
MULTI_NODE_MAX_CANDIDATES = 100
MULTI_NODE_SECONDS = 60.0  # Karpenter's multi-node consolidation timeout
SINGLE_NODE_SECONDS = 180.0  # and its single-node one
STATIC_LEFT_ALONE = "its NodePool is static: consolidation leaves it"  # emptiness too (drift replaces it)


@dataclass
class Command:
    reason: str  # Drifted, Empty or Underutilized
    consolidation_type: str  # "" (drift), "empty", "multi" or "single"
    candidates: list[Candidate]
    replacements: list[NewNodeClaim] = field(default_factory=list)
    scores: dict[str, Score] = field(default_factory=dict)  # Balanced NodePool -> the move's score

    @property
    def decision(self) -> str:
        return "replace" if self.replacements else "delete"

    @property
    def savings(self) -> float | None:
        if any(c.price is None for c in self.candidates):
            return None
        return sum(c.price or 0.0 for c in self.candidates) - sum(r.cheapest_price for r in self.replacements)

    def describe(self) -> str:
        nodes = ", ".join(f"{c.node_name} ({c.instance_type_name})" for c in self.candidates)
        text = f"{self.reason}: {self.decision} {nodes}"
        if self.replacements:
            options = ", ".join(
                "/".join(o.name for o in r.instance_types[:3]) + ("/..." if len(r.instance_types) > 3 else "")
                for r in self.replacements
            )
            text += f" with {len(self.replacements)} new node(s) ({options})"
        if self.consolidation_type and self.savings is not None:
            text += f", saving ${self.savings:.4f}/h"
        for pool, found in sorted(self.scores.items()):
            text += f", NodePool {pool} {found.text()}"
        return text

    def fields(self) -> dict[str, Any]:
        """The command as structured log fields: the reason, each candidate with its price, each replacement's
        instance types with theirs, and the predicted saving per hour."""
        return {
            "reason": self.reason,
            "consolidation_type": self.consolidation_type,
            "action": self.decision,
            "candidates": [
                {
                    "nodeclaim": c.name,
                    "node": c.node_name,
                    "instance_type": c.instance_type_name,
                    "capacity_type": c.capacity_type,
                    "price": c.price,
                    "pods": len(c.pods),
                }
                for c in self.candidates
            ],
            "replacements": [[[o.name, round(o.price, 6)] for o in r.instance_types[:10]] for r in self.replacements],
            "savings": None if self.savings is None else round(self.savings, 6),
            "scores": {pool: round(found.value, 4) for pool, found in sorted(self.scores.items())},
        }


@dataclass
class Decisions:
    command: Command | None = None
    blocked: dict[str, str] = field(default_factory=dict)  # node name -> why no method disrupts it now
    eligible: dict[str, int] = field(default_factory=dict)  # reason -> candidates before budgets
    budgets: dict[tuple[str, str], BudgetVerdict] = field(default_factory=dict)  # (nodepool, reason)
    seconds: dict[str, float] = field(default_factory=dict)  # method -> time spent deciding
    failed_validations: list[tuple[str, str]] = field(default_factory=list)  # (consolidation type, why)
    balanced_rejections: list[tuple[str, float]] = field(default_factory=list)  # (NodePool, score) of moves refused


class Methods:
    def __init__(
        self,
        rescheduler: Rescheduler,
        budgets: Budgets,
        *,
        spot_to_spot: bool = False,
        timer: Callable[[], float] = time.perf_counter,
        totals: dict[str, PoolTotals] | None = None,
        static_counts: dict[str, Counts] | None = None,
    ) -> None:
        """``static_counts``: per static NodePool, its NodeClaims running, pending disruption and deleting."""
        self._rescheduler, self._budgets, self._spot_to_spot, self._timer = rescheduler, budgets, spot_to_spot, timer
        self._totals = totals or {}  # per NodePool, what Balanced scores a move against
        self._static = static_counts or {}
        self.failed_validations: list[tuple[str, str]] = []  # (consolidation type, why) of commands not proposed
        self.balanced_rejections: list[tuple[str, float]] = []

    def decide(self, candidates: Sequence[Candidate], time_left: Callable[[], float] = lambda: math.inf) -> Decisions:
        decisions = Decisions()
        methods: list[tuple[str, Callable[[Sequence[Candidate], Decisions, Callable[[], float]], Command | None]]] = [
            ("static drift", self.static_drift),
            ("drift", self.drift),
            ("emptiness", self.emptiness),
            ("multi-node consolidation", self.multi_node),
            ("single-node consolidation", self.single_node),
        ]
        for name, method in methods:
            started = self._timer()
            command = method(candidates, decisions, time_left)
            decisions.seconds[name] = self._timer() - started
            if command is not None:
                decisions.command = command
                break
        decisions.budgets = dict(self._budgets.verdicts)
        decisions.failed_validations = list(self.failed_validations)
        decisions.balanced_rejections = list(self.balanced_rejections)
        return decisions

    # --- the methods -------------------------------------------------------------------------------
    def static_drift(self, all_: Sequence[Candidate], decisions: Decisions, _: Callable[[], float]) -> Command | None:
        drifted = sorted(
            (c for c in all_ if is_static(c.nodepool) and c.has_condition(DRIFTED_CONDITION)),
            key=lambda c: c.drifted_since,
        )
        decisions.eligible[DRIFTED] = len(drifted)
        by_pool: dict[str, list[Candidate]] = {}
        for candidate in drifted:
            if candidate.blocked_pods and not candidate.claim.spec.termination_grace_period:
                decisions.blocked[candidate.node_name] = candidate.blocked_pods
            else:
                by_pool.setdefault(candidate.nodepool.name, []).append(candidate)
        chosen: list[Candidate] = []
        for name, group in by_pool.items():
            nodepool, found = group[0].nodepool, self._static.get(name, Counts(len(group), 0, 0))
            if found.running + found.pending_disruption > (nodepool.spec.replicas or 0):
                why = "its static NodePool is scaling down: drift waits until it has its replicas"
                decisions.blocked.update(dict.fromkeys((c.node_name for c in group), why))
                continue
            left = self._budgets.left(name, DRIFTED)
            allowed = room_under_limit(nodepool, found, min(left, len(group)))
            for index, candidate in enumerate(group):
                if index < allowed:
                    chosen.append(candidate)
                    self._budgets.take(name, DRIFTED)
                elif index >= left:
                    decisions.blocked[candidate.node_name] = self._budgets.why_not(name, DRIFTED)
                else:
                    decisions.blocked[candidate.node_name] = "limits.nodes leaves no room for its replacement"
        replacements = [static_nodeclaim(c.nodepool) for c in chosen]
        return Command(DRIFTED, "", chosen, replacements) if chosen else None

    def drift(self, all_: Sequence[Candidate], decisions: Decisions, time_left: Callable[[], float]) -> Command | None:
        drifted = sorted(
            (c for c in all_ if not is_static(c.nodepool) and c.has_condition(DRIFTED_CONDITION)),
            key=lambda c: c.drifted_since,
        )
        decisions.eligible[DRIFTED] = decisions.eligible.get(DRIFTED, 0) + len(drifted)
        usable = []
        for candidate in drifted:
            if candidate.blocked_pods and not candidate.claim.spec.termination_grace_period:
                decisions.blocked[candidate.node_name] = candidate.blocked_pods
            else:
                usable.append(candidate)
        empty = self._within_budget([c for c in usable if c.empty], DRIFTED, decisions)
        if empty:
            return Command(DRIFTED, "", empty)
        chosen: list[Candidate] = []
        replacements: list[NewNodeClaim] = []
        for candidate in usable:
            pool = candidate.nodepool.name
            if self._budgets.left(pool, DRIFTED) <= 0:
                decisions.blocked[candidate.node_name] = self._budgets.why_not(pool, DRIFTED)
                continue
            if time_left() <= 0:
                decisions.blocked[candidate.node_name] = "left for the next pass: this one ran out of time"
                continue
            rescheduling = self._rescheduler.reschedule([*chosen, candidate])
            if not rescheduling.schedulable:
                decisions.blocked[candidate.node_name] = f"pods cannot move: {rescheduling.failure_text()}"
                continue
            chosen.append(candidate)
            replacements = rescheduling.replacements
            self._budgets.take(pool, DRIFTED)
        return Command(DRIFTED, "", chosen, replacements) if chosen else None

    def emptiness(self, all_: Sequence[Candidate], decisions: Decisions, _: Callable[[], float]) -> Command | None:
        for candidate in all_:  # said here, as consolidation says it: an Empty command may end the pass first
            if is_static(candidate.nodepool):
                decisions.blocked.setdefault(candidate.node_name, STATIC_LEFT_ALONE)
        empty = [c for c in all_ if c.consolidatable and c.empty and not is_static(c.nodepool)]
        decisions.eligible[EMPTY] = len(empty)
        chosen = self._within_budget(empty, EMPTY, decisions)
        return Command(EMPTY, "empty", chosen) if chosen else None

    def multi_node(
        self, all_: Sequence[Candidate], decisions: Decisions, time_left: Callable[[], float]
    ) -> Command | None:
        usable = self._consolidation_candidates(all_, decisions)
        chosen = self._within_budget(usable, UNDERUTILIZED, decisions, spend=False)[:MULTI_NODE_MAX_CANDIDATES]
        if len(chosen) < 2:
            return None
        deadline = self._timer() + min(MULTI_NODE_SECONDS, time_left())
        best: Command | None = None
        low, high = 2, len(chosen)
        while low <= high and self._timer() < deadline:  # the longest prefix that consolidates
            middle = (low + high) // 2
            command = self.consolidate(chosen[:middle], "multi")
            if isinstance(command, Command):
                best, low = command, middle + 1
            else:
                high = middle - 1
        if best is not None:
            for candidate in best.candidates:
                self._budgets.take(candidate.nodepool.name, UNDERUTILIZED)
        return best

    def single_node(
        self, all_: Sequence[Candidate], decisions: Decisions, time_left: Callable[[], float]
    ) -> Command | None:
        usable = self._consolidation_candidates(all_, decisions)
        deadline = self._timer() + min(SINGLE_NODE_SECONDS, time_left())
        for candidate in usable:
            pool = candidate.nodepool.name
            if self._budgets.left(pool, UNDERUTILIZED) <= 0:
                decisions.blocked[candidate.node_name] = self._budgets.why_not(pool, UNDERUTILIZED)
                continue
            if self._timer() >= deadline:
                decisions.blocked.setdefault(candidate.node_name, "not evaluated: consolidation ran out of time")
                continue
            best = balanced.best_case(candidate, self._totals)
            if best is not None and not best.approved:  # a deletion scores highest: no move of it can pass
                decisions.blocked[candidate.node_name] = f"Balanced: even deleting it, {best.text()}"
                continue
            command = self.consolidate([candidate], "single")
            if isinstance(command, Command):
                self._budgets.take(pool, UNDERUTILIZED)
                return command
            decisions.blocked[candidate.node_name] = command
        return None

    # --- shared steps ------------------------------------------------------------------------------
    def _consolidation_candidates(self, all_: Sequence[Candidate], decisions: Decisions) -> list[Candidate]:
        usable = []
        for candidate in all_:
            if is_static(candidate.nodepool):
                decisions.blocked.setdefault(candidate.node_name, STATIC_LEFT_ALONE)
            elif not candidate.consolidatable:
                decisions.blocked.setdefault(candidate.node_name, "not consolidatable yet (consolidateAfter)")
            elif candidate.nodepool.spec.disruption.consolidation_policy not in UNDERUTILIZED_POLICIES:
                decisions.blocked.setdefault(candidate.node_name, "its NodePool consolidates only empty nodes")
            elif candidate.blocked_pods:
                decisions.blocked[candidate.node_name] = candidate.blocked_pods
            else:
                usable.append(candidate)
        decisions.eligible[UNDERUTILIZED] = len(usable)
        # Karpenter v1.14's order for every policy: most saved per unit of disruption first, so that a budget-limited
        # pass (and multi-node's prefix search) takes the moves worth most; then cheapest to disrupt, then by name.
        return sorted(usable, key=lambda c: (-balanced.savings_ratio(c), c.cost, c.name))

    def _within_budget(
        self, candidates: Sequence[Candidate], reason: str, decisions: Decisions, *, spend: bool = True
    ) -> list[Candidate]:
        chosen: list[Candidate] = []
        left: dict[str, int] = {}
        for candidate in candidates:
            pool = candidate.nodepool.name
            left.setdefault(pool, self._budgets.left(pool, reason))
            if left[pool] <= 0:
                decisions.blocked[candidate.node_name] = self._budgets.why_not(pool, reason)
                continue
            left[pool] -= 1
            chosen.append(candidate)
            if spend:
                self._budgets.take(pool, reason)
        return chosen

    def consolidate(self, candidates: Sequence[Candidate], kind: str) -> Command | str:
        """A consolidation command for exactly these candidates, or why there is none."""
        rescheduling = self._rescheduler.reschedule(candidates)
        if not rescheduling.schedulable:
            return f"pods cannot move: {rescheduling.failure_text()}"
        if not rescheduling.replacements:
            return self._validated(self._worth_it(Command(UNDERUTILIZED, kind, list(candidates))), rescheduling)
        if len(rescheduling.replacements) > 1:
            return f"Can't remove without creating {len(rescheduling.replacements)} candidates"
        new = rescheduling.replacements[0]
        # Priced against the candidates it stands in for: a candidate of another NodePool whose pods fit on other
        # nodes is a deletion of its own that must not pay for a dearer node (two NodePools whose nodes cannot
        # host each other's pods used to be "consolidated" into a node dearer than the one it replaced).
        served = rescheduling.served(new, candidates)
        try:
            replacement = cheaper_replacement(new, served, self._spot_to_spot)
        except NotCheaper as why:
            return str(why)
        command = Command(UNDERUTILIZED, kind, list(candidates), [replacement])
        return self._validated(self._worth_it(command), rescheduling)

    def _validated(self, command: Command | str, rescheduling: Rescheduling) -> Command | str:
        """``command`` if its placements pass the placement checks (``verification``), else why not (counted)."""
        if isinstance(command, str):
            return command
        problems = self._rescheduler.problems(rescheduling)
        if not problems:
            return command
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        why = f"failed validation: {problems[0]}{more}"
        self.failed_validations.append((command.consolidation_type, why))
        return why

    def _worth_it(self, command: Command) -> Command | str:
        """``command`` with its Balanced scores, or why it is not worth it: it saves less than its NodePools'
        opt-in minimum (``minimum_saving``), or a Balanced NodePool's score is below the threshold (``balanced``)."""
        command.scores = balanced.evaluate(command.candidates, command.savings, self._totals)
        refused = balanced.rejection(command.scores)
        if refused:
            self.balanced_rejections += [(p, s.value) for p, s in sorted(command.scores.items()) if not s.approved]
        return below_minimum(command.candidates, command.savings) or refused or command
