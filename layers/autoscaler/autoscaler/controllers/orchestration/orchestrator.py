"""One replacement orchestrator for every reason (after Karpenter's disruption queue): launch the replacements
first, delete the old nodes once the replacements are initialized, give up when that does not happen in time.

A pass lasts seconds, a replacement takes minutes to boot, so a command lives on its candidates' records
(``record``) and every pass takes it one step further:

``start(command)``
    1. each candidate gets its record (``Launching``; ``Replacing`` when nothing is to be created) and, when its
       policy took the budget at decision, the ``DisruptionReason`` condition and the disrupted taint;
    2. the replacements are created, each annotated ``serverless-karpenter.io/replaces`` with its candidates;
    3. each candidate's record becomes ``Replacing`` with its replacements' names (a ``DisruptionLaunching``
       event). A candidate whose replacement could not be created is given up; a command that creates
       nothing and took its budget at decision deletes its candidates at once.

``advance(claims, nodes)``, for every candidate of the reasons this orchestrator runs:
    - ``Launching``: the pass that started it died before step 3: it adopts the NodeClaims annotated as
      replacing the candidate, or gives the command up when fewer than expected were created;
    - a recorded replacement gone or being deleted (its launch failed): give up;
    - replacements not all initialized: wait, or give up once the policy's timeout since ``started`` passed;
    - all initialized: delete the candidate (``DisruptionTerminating``; the termination function drains it),
      for ``BEFORE_DELETION`` policies once do-not-disrupt and the budgets allow it, cordoning it first.

Giving up follows the policy (``RELEASE`` or ``KEEP_FAILED``) and frees the replacements: they lose the
candidate's name from ``replaces``, so consolidation may take them. A pass that dies between any two writes
leaves a state the next pass reads the same way: a record without all its names adopts or gives up, and
(with ``clean_up``) a mark or a disrupted taint without a record is removed. Old record formats are read
once (``legacy``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from enum import Enum

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.conditions import set_condition
from autoscaler.apis.v1.nodeclaim import NodeClaim, NodeClaimStatus
from autoscaler.apis.v1.nodepool import NodePool
from autoscaler.controllers.concurrency import each
from autoscaler.controllers.orchestration.budgets import Budgets, counts
from autoscaler.controllers.orchestration.command import Command, Outcome, Replacement, Target, record_or_none
from autoscaler.controllers.orchestration.endings import Endings
from autoscaler.controllers.orchestration.legacy import OLD_REBALANCE_REPLACES, upgrades
from autoscaler.controllers.orchestration.policy import BudgetCheck, ReasonPolicy
from autoscaler.controllers.orchestration.record import (
    COMMAND,
    DISRUPTION_REASON,
    REPLACES,
    CommandRecord,
    CommandState,
    new_record,
    patched,
    replaces,
)
from autoscaler.controllers.state.nodeclaims import do_not_disrupt
from autoscaler.controllers.state.nodes import (
    DISRUPTED_TAINT,
    KubeObject,
    node_of,
    nodes_by_provider_id,
    taints_with_disrupted,
)
from autoscaler.controllers.state.pods import pods_by_node
from autoscaler.kube.objects import Node
from autoscaler.kube.port import Cluster, ClusterError, Event

log = logging.getLogger(__name__)


class _Step(Enum):
    WAIT = "wait"
    READY = "ready"
    GIVE_UP = "give up"


class Orchestrator:
    """Runs the commands of ``policies``' reasons. ``clean_up``: also remove what commands that are no more
    left behind (unreadable records, marks without a record, stray disrupted taints); only the orchestrator
    of passes that never overlap one another and that mark at start (disruption's) may."""

    def __init__(
        self,
        cluster: Cluster,
        clock: Callable[[], datetime],
        policies: Sequence[ReasonPolicy],
        *,
        clean_up: bool = False,
    ) -> None:
        self._cluster, self._clock, self._clean_up = cluster, clock, clean_up
        self._policies = {p.reason: p for p in policies}
        self._endings = Endings(cluster, clock)

    # --- starting ----------------------------------------------------------------------------------
    def start(self, command: Command, outcome: Outcome) -> None:
        policy = self._policies[command.reason]
        now = self._clock()
        state = CommandState.LAUNCHING if command.replacements else CommandState.REPLACING
        for index, target in enumerate(command.candidates):
            expected = sum(1 for r in command.replacements if target.name in r.replaces)
            record = new_record(command.reason, expected, now, state, ledger=command.ledger.get(target.name))
            try:
                self._mark(target, record, policy, command.message, now)
            except ClusterError as error:  # the ones marked so far are given up; the rest were never touched
                outcome.failed[target.name] = f"marking: {error}"
                marked = command.candidates[: index + 1]
                self.give_up(marked, policy, f"could not mark {target.name}: {error}", outcome)
                return
            outcome.started.append(target.name)
        if not command.replacements:
            if policy.marks_at_start:
                self.delete(command.candidates, command.reason, outcome)
            else:
                outcome.recorded.update({t.name: [] for t in command.candidates})
            return
        made = self._create(command, policy, outcome)
        for target in command.candidates:
            if target.name in outcome.abandoned:
                continue
            names = tuple(stored.name for replacement, stored in made if target.name in replacement.replaces)
            ledger = command.ledger.get(target.name)
            record = new_record(command.reason, len(names), now, CommandState.REPLACING, names, ledger=ledger)
            if self._write_record(target.claim, record, outcome):  # else the next pass adopts them
                outcome.recorded[target.name] = list(names)
            outcome.waiting[target.name] = "its command started this pass"
            if names:
                message = f"Launching NodeClaim {', '.join(names)}: {command.reason}"
                self._cluster.record_event(Event(target.claim.ref, "DisruptionLaunching", message))

    def _mark(self, target: Target, record: CommandRecord, policy: ReasonPolicy, message: str, now: datetime) -> None:
        claim = target.claim
        self._cluster.patch_metadata(claim.ref, annotations={COMMAND: record.text()})
        if not policy.marks_at_start:
            return
        status = claim.status or NodeClaimStatus()
        conditions = set_condition(status.conditions, DISRUPTION_REASON, "True", record.reason, message, now=now)
        stored = self._cluster.nodeclaim(claim.name) or claim
        self._cluster.write_status(
            stored.model_copy(
                update={"status": (stored.status or status).model_copy(update={"conditions": conditions})}
            )
        )
        node = Node(target.node)
        taints = taints_with_disrupted(node)
        if taints is not None and node.name:
            self._cluster.set_node_taints(node.name, taints)

    def _create(self, command: Command, policy: ReasonPolicy, outcome: Outcome) -> list[tuple[Replacement, NodeClaim]]:
        """Create the replacements; the candidates of one that failed are given up (what was made for them
        freed), the others go on."""
        claims = [patched(r.nodeclaim, {REPLACES: ",".join(r.replaces)}) for r in command.replacements]
        made: list[tuple[Replacement, NodeClaim]] = []
        lost: dict[str, str] = {}
        for replacement, result in zip(command.replacements, each(self._cluster.create_nodeclaim, claims), strict=True):
            if isinstance(result, ClusterError):
                lost.update(dict.fromkeys(replacement.replaces, f"creating a replacement failed: {result}"))
            elif isinstance(result, Exception):
                raise result
            else:
                made.append((replacement, result))
                outcome.created.append(result)
        for why in sorted(set(lost.values())):
            targets = [t for t in command.candidates if lost.get(t.name) == why]
            self.give_up(targets, policy, why, outcome, [stored for _, stored in made])
        return made

    # --- commands in flight ------------------------------------------------------------------------
    def advance(
        self,
        claims: Sequence[NodeClaim],
        nodes: Sequence[KubeObject],
        outcome: Outcome,
        *,
        pods: Sequence[KubeObject] = (),
        nodepools: Sequence[NodePool] = (),
    ) -> list[NodeClaim]:
        """One step for every command of this orchestrator's reasons; ``pods`` and ``nodepools`` are read by
        ``BEFORE_DELETION`` policies. Returns ``claims`` as they now stand (old record formats upgraded)."""
        now = self._clock()
        claims = self._upgrade(claims, now, outcome)
        by_name = {c.name: c for c in claims}
        by_provider = nodes_by_provider_id(nodes)
        standing_in: dict[str, list[NodeClaim]] = {}  # candidate -> live NodeClaims annotated as replacing it
        for claim in claims:
            if not claim.metadata.deletion_timestamp:
                for name in replaces(claim):
                    standing_in.setdefault(name, []).append(claim)
        ready: list[tuple[Target, ReasonPolicy]] = []
        for claim in claims:
            record = record_or_none(claim)
            policy = self._policies.get(record.reason) if record is not None else None
            if record is None or policy is None or record.state is CommandState.FAILED:
                continue
            if claim.metadata.deletion_timestamp:
                continue
            target = Target(claim, node_of(claim, by_provider) or {})
            found = [c for c in standing_in.get(claim.name, ()) if c.name not in record.created]
            live = [by_name[n] for n in record.created if n in by_name and not by_name[n].metadata.deletion_timestamp]
            freed = [*live, *found]  # what giving up releases
            if record.state is CommandState.LAUNCHING:
                if len(record.created) + len(found) < record.expected:
                    self.give_up([target], policy, "its replacements were not all created", outcome, freed)
                    continue
                record = record.moved_to(CommandState.REPLACING, (*record.created, *(c.name for c in found)))
                outcome.adopted += [c.name for c in found]
                if self._write_record(claim, record, outcome):
                    outcome.recorded[claim.name] = list(record.created)
            step, why = _step(record, by_name, policy, now)
            if step is _Step.GIVE_UP:
                self.give_up([target], policy, why, outcome, freed)
            elif step is _Step.WAIT:
                outcome.waiting[claim.name] = why
            else:
                ready.append((target, policy))
        self._endings.release_orphans(claims, by_name, outcome)
        if ready:
            self._delete_ready(
                ready, claims=claims, nodes=nodes, pods=pods, nodepools=nodepools, now=now, outcome=outcome
            )
        if self._clean_up:
            self._endings.remove_leftovers(claims, by_provider, outcome)
        return claims

    def _upgrade(self, claims: Sequence[NodeClaim], now: datetime, outcome: Outcome) -> list[NodeClaim]:
        """Read the old record formats of this orchestrator's reasons once: write what they stand for."""
        by_name = {c.name: c for c in claims}
        candidate_failed = False
        for upgrade in upgrades(claims, now):
            if upgrade.reason not in self._policies:
                continue
            if upgrade.record is None and upgrade.drop == (OLD_REBALANCE_REPLACES,) and candidate_failed:
                continue  # a replacement keeps its old name until its candidate's record is written
            change: dict[str, str | None] = dict.fromkeys(upgrade.drop)
            if upgrade.record is not None:
                change[COMMAND] = upgrade.record.text()
            try:
                self._cluster.patch_metadata(by_name[upgrade.name].ref, annotations=change)
            except ClusterError as error:
                outcome.failed[upgrade.name] = f"upgrading its record: {error}"
                candidate_failed = candidate_failed or upgrade.drop != (OLD_REBALANCE_REPLACES,)
                continue
            by_name[upgrade.name] = patched(by_name[upgrade.name], change)
            outcome.upgraded.append(upgrade.name)
        if outcome.upgraded:
            log.info("read the old record format of %s", ", ".join(outcome.upgraded))
        return [by_name[c.name] for c in claims]

    def _delete_ready(
        self,
        ready: Sequence[tuple[Target, ReasonPolicy]],
        *,
        claims: Sequence[NodeClaim],
        nodes: Sequence[KubeObject],
        pods: Sequence[KubeObject],
        nodepools: Sequence[NodePool],
        now: datetime,
        outcome: Outcome,
    ) -> None:
        budgets: Budgets | None = None
        pods_on: Mapping[str, list[KubeObject]] = {}
        go: list[tuple[Target, str, bool]] = []
        for target, policy in ready:
            if policy.budget is BudgetCheck.BEFORE_DELETION:
                if budgets is None:
                    budgets, pods_on = Budgets(nodepools, *counts(claims, nodes), now), pods_by_node(pods)
                blocker = _blocker(target, policy.reason, budgets, pods_on)
                if blocker is not None:
                    outcome.waiting[target.name] = blocker
                    continue
            go.append((target, policy.reason, policy.budget is BudgetCheck.BEFORE_DELETION))
        self._delete(go, outcome)

    # --- endings -----------------------------------------------------------------------------------
    def delete(self, targets: Sequence[Target], reason: str, outcome: Outcome) -> None:
        """Delete the NodeClaims (termination drains them), with a ``DisruptionTerminating`` event each."""
        self._delete([(t, reason, False) for t in targets], outcome)

    def _delete(self, items: Sequence[tuple[Target, str, bool]], outcome: Outcome) -> None:
        """(target, reason, cordon first) each; a candidate that was not marked is cordoned, as the interruption
        function cordons, so that nothing new lands on it while it drains."""

        def delete_one(item: tuple[Target, str, bool]) -> None:
            target, reason, cordon = item
            if cordon and Node(target.node).name:
                self._cluster.cordon(dict(target.node), DISRUPTED_TAINT)
            self._cluster.record_event(
                Event(target.claim.ref, "DisruptionTerminating", f"Disrupting NodeClaim: {reason}")
            )
            self._cluster.delete(target.claim.ref)

        for (target, reason, _), result in zip(items, each(delete_one, list(items)), strict=True):
            if isinstance(result, ClusterError):
                outcome.failed[target.name] = f"deleting: {result}"
            elif isinstance(result, Exception):
                raise result
            else:
                outcome.deleted[target.name] = reason

    def give_up(
        self,
        targets: Sequence[Target],
        policy: ReasonPolicy,
        why: str,
        outcome: Outcome,
        replacements: Sequence[NodeClaim] = (),
    ) -> None:
        """End the candidates' commands as ``policy`` says (``endings``)."""
        self._endings.give_up(targets, policy, why, outcome, replacements)

    def _write_record(self, claim: NodeClaim, record: CommandRecord, outcome: Outcome) -> bool:
        try:
            self._cluster.patch_metadata(claim.ref, annotations={COMMAND: record.text()})
        except ClusterError as error:
            outcome.failed[claim.name] = f"recording its replacements: {error}"
            return False
        return True


def _step(
    record: CommandRecord, by_name: Mapping[str, NodeClaim], policy: ReasonPolicy, now: datetime
) -> tuple[_Step, str]:
    for name in record.created:
        replacement = by_name.get(name)
        if replacement is None or replacement.metadata.deletion_timestamp:
            return _Step.GIVE_UP, f"replacement {name} failed to launch or was deleted"
    pending = [n for n in record.created if not by_name[n].initialized]
    if not pending:
        return _Step.READY, ""
    if now - record.started > policy.timeout:
        return _Step.GIVE_UP, f"replacements {', '.join(pending)} were not initialized within {policy.timeout}"
    return _Step.WAIT, f"replacement {pending[0]} is not initialized yet"


def _blocker(target: Target, reason: str, budgets: Budgets, pods_on: Mapping[str, list[KubeObject]]) -> str | None:
    """Why a candidate whose replacements are up must still wait (do-not-disrupt, budgets), taking budget if not."""
    node = Node(target.node) if target.node else None
    blocker = do_not_disrupt(node=node, claim=target.claim, pods=pods_on.get(node.name, []) if node else [])
    if blocker is not None:
        return blocker
    pool = (target.claim.metadata.labels or {}).get(wk.LABEL_NODEPOOL, "")
    if not budgets.knows(pool):
        return None
    if budgets.left(pool, reason) <= 0:
        return f"the disruption budgets of NodePool {pool} allow no disruption now ({budgets.why_not(pool, reason)})"
    budgets.take(pool, reason)
    return None
