"""How commands end when they do not succeed: giving a command up as its policy says, freeing its replacements, and
(for the orchestrator that cleans up) removing what commands that are no more left behind. Pure: through the
Cluster port."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.controllers.orchestration.command import Outcome, Target, in_command, record_or_none
from autoscaler.controllers.orchestration.legacy import OLD_REBALANCE_REPLACES
from autoscaler.controllers.orchestration.policy import (
    POLICIES,
    REPLACEMENT_TIMEOUT,
    BudgetCheck,
    GiveUp,
    ReasonPolicy,
)
from autoscaler.controllers.orchestration.record import (
    COMMAND,
    DISRUPTION_REASON,
    REPLACES,
    CommandState,
    RecordError,
    is_marked,
    new_record,
    read_record,
    replaces,
)
from autoscaler.controllers.state.nodes import KubeObject, node_of
from autoscaler.kube.objects import Node
from autoscaler.kube.port import Cluster, ClusterError, Event, ObjectRef

log = logging.getLogger(__name__)


def _released(reason: str) -> ReasonPolicy:
    """How to give up a record no policy runs (unreadable, or a reason this version does not know)."""
    return ReasonPolicy(reason, REPLACEMENT_TIMEOUT, BudgetCheck.AT_DECISION, GiveUp.RELEASE, "DisruptionBlocked")


class Endings:
    """Giving up and cleaning up, for the orchestrator (its commands) and its clean-up (commands no more)."""

    def __init__(self, cluster: Cluster, clock: Callable[[], datetime]) -> None:
        self._cluster, self._clock = cluster, clock

    def give_up(
        self,
        targets: Sequence[Target],
        policy: ReasonPolicy,
        why: str,
        outcome: Outcome,
        replacements: Sequence[NodeClaim] = (),
    ) -> None:
        """End the candidates' commands as ``policy`` says, with its Warning event, and free ``replacements``
        from the candidates given up."""
        log.warning("giving up %s for %s: %s", policy.reason, ", ".join(t.name for t in targets), why)
        ended = set()
        for target in targets:
            try:
                if policy.give_up is GiveUp.KEEP_FAILED:
                    record = record_or_none(target.claim) or new_record(
                        policy.reason, 0, self._clock(), CommandState.FAILED
                    )
                    self._cluster.patch_metadata(
                        target.claim.ref, annotations={COMMAND: record.moved_to(CommandState.FAILED).text()}
                    )
                else:
                    self._unmark(target, outcome)
            except ClusterError as error:
                outcome.failed[target.name] = f"giving up: {error}"
                continue
            ended.add(target.name)
            outcome.abandoned[target.name] = why
            outcome.waiting.pop(target.name, None)
            self._cluster.record_event(Event(target.claim.ref, policy.give_up_event, why, "Warning"))
        for replacement in replacements:
            kept = [n for n in replaces(replacement) if n not in ended]
            if replacement.metadata.deletion_timestamp or len(kept) == len(replaces(replacement)):
                continue
            try:  # no longer a replacement for them: consolidation may take it like any other node
                self._cluster.patch_metadata(replacement.ref, annotations={REPLACES: ",".join(kept) or None})
            except ClusterError as error:
                outcome.failed[replacement.name] = f"releasing the replacement: {error}"

    def _unmark(self, target: Target, outcome: Outcome) -> None:
        claim = target.claim
        self._cluster.patch_metadata(claim.ref, annotations={COMMAND: None})
        stored = self._cluster.nodeclaim(claim.name)
        if stored is not None and stored.status is not None and is_marked(stored):
            kept = [c for c in stored.status.conditions or [] if c.type != DISRUPTION_REASON]
            self._cluster.write_status(
                stored.model_copy(update={"status": stored.status.model_copy(update={"conditions": kept})})
            )
        name = Node(target.node).name
        node = self._cluster.get(ObjectRef("Node", name)) if name else None  # tainted since it was read
        if node is not None:
            self.remove_stray_taint(node, outcome)

    def release_orphans(self, claims: Sequence[NodeClaim], by_name: Mapping[str, NodeClaim], outcome: Outcome) -> None:
        """Replacements still standing in for a candidate that is in no command any more (a pass died while
        giving it up) are released: the candidate exists, is not being deleted, and nothing will delete it."""
        for claim in claims:
            names = replaces(claim)
            annotations = claim.metadata.annotations or {}
            if not names or claim.metadata.deletion_timestamp or OLD_REBALANCE_REPLACES in annotations:
                continue  # an old rebalance replacement: its candidate's upgrade decides
            candidates = [by_name[n] for n in names if n in by_name]
            orphaned = {c.name for c in candidates if not c.metadata.deletion_timestamp and not in_command(c)}
            if orphaned:
                kept = ",".join(n for n in names if n not in orphaned) or None
                try:
                    self._cluster.patch_metadata(claim.ref, annotations={REPLACES: kept})
                except ClusterError as error:
                    outcome.failed[claim.name] = f"releasing the replacement: {error}"

    def remove_leftovers(
        self, claims: Sequence[NodeClaim], by_provider: Mapping[str, KubeObject], outcome: Outcome
    ) -> None:
        """Unreadable records, records of reasons nothing runs, marks without a record: given up (released);
        a disrupted taint on a node whose NodeClaim is in no command: removed."""
        for claim in claims:
            if claim.metadata.deletion_timestamp or claim.name in outcome.abandoned:
                continue
            node = node_of(claim, by_provider)
            target = Target(claim, node or {})
            try:
                record = read_record(claim)
            except RecordError as error:
                self.give_up([target], _released("Unknown"), f"its command record is unreadable: {error}", outcome)
                continue
            if record is not None and record.reason not in POLICIES:
                why = f"no policy runs its command's reason {record.reason!r}"
                self.give_up([target], _released(record.reason), why, outcome)
            elif record is None and is_marked(claim):
                self.give_up([target], _released("Unknown"), "its command record is missing", outcome)
            elif record is None and node is not None:
                self.remove_stray_taint(node, outcome)

    def remove_stray_taint(self, node: KubeObject, outcome: Outcome) -> None:
        view = Node(node)
        taints = view.taints
        kept = [t for t in taints if t.get("key") != wk.TAINT_DISRUPTED]
        if len(kept) == len(taints) or not view.name or view.deleting:
            return
        if view.unschedulable:
            return  # cordoned by the interruption function, whose delete follows: not ours to undo
        try:
            self._cluster.set_node_taints(view.name, kept)
        except ClusterError as error:
            outcome.failed[view.name] = f"removing the disrupted taint: {error}"
