"""Carrying out disruption commands across invocations: replacement first, then the old nodes.

A command lives on its candidates, so any later pass can take it up:

1. each candidate NodeClaim gets the condition ``DisruptionReason`` (True, the command's reason) and the
   annotation ``serverless-karpenter.io/disruption`` recording how many replacements it waits for; its Node is
   tainted ``karpenter.sh/disrupted:NoSchedule`` so nothing new lands there;
2. the replacement NodeClaims are created (the provisioner's next pass launches them) and their names added
   to the annotation;
3. a later pass deletes the candidates once every replacement is initialized (the termination function then
   drains them), or gives the command up when a replacement is gone or not initialized within
   ``REPLACEMENT_TIMEOUT``: the candidates are unmarked and untainted, with a ``DisruptionBlocked`` event.

A pass that dies between any two steps leaves a state the next pass reads the same way: a mark without all
its replacement names is given up, a stray disrupted taint on an unmarked node is removed.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.conditions import get_condition, is_true, set_condition
from autoscaler.apis.v1.ec2nodeclass import EC2NodeClass
from autoscaler.apis.v1.nodeclaim import NodeClaim, NodeClaimStatus
from autoscaler.apis.v1.nodepool import NodePool
from autoscaler.clock import parse_time
from autoscaler.controllers.concurrency import each
from autoscaler.controllers.disruption.candidates import DISRUPTION_REASON, REPLACES, Candidate, is_marked
from autoscaler.controllers.disruption.conditions import INITIALIZED
from autoscaler.controllers.disruption.methods import Command
from autoscaler.controllers.provisioning.nodeclaims import to_nodeclaim
from autoscaler.controllers.termination.nodes import node_name, nodes_by_provider_id, taints_with_disrupted
from autoscaler.kube.port import Cluster, ClusterError, Event, ObjectRef

log = logging.getLogger(__name__)
COMMAND = "serverless-karpenter.io/disruption"  # {"expect": N, "replacements": [names]} on each candidate
REPLACEMENT_TIMEOUT = timedelta(minutes=15)  # Karpenter waits 10; our passes run every 5 minutes

KubeObject = Mapping[str, Any]


@dataclass
class Outcome:
    """What the execution did this pass (NodeClaim names)."""

    started: list[str] = field(default_factory=list)  # marked and tainted
    created: list[str] = field(default_factory=list)  # replacements created
    deleted: dict[str, str] = field(default_factory=dict)  # candidate -> reason (Drifted, Expired, ...)
    waiting: list[str] = field(default_factory=list)  # candidates waiting for their replacements
    abandoned: dict[str, str] = field(default_factory=dict)  # candidate -> why its command was given up
    failed: dict[str, str] = field(default_factory=dict)  # writes that failed (the next pass retries)


@dataclass(frozen=True)
class Target:
    """A NodeClaim a command disrupts, and its Node."""

    claim: NodeClaim
    node: KubeObject


def _record(claim: NodeClaim) -> dict[str, Any] | None:
    try:
        value = json.loads((claim.metadata.annotations or {}).get(COMMAND, ""))
    except ValueError:
        return None
    ok = (
        isinstance(value, dict) and isinstance(value.get("expect"), int) and isinstance(value.get("replacements"), list)
    )
    return value if ok else None


def _claim_ref(claim: NodeClaim) -> ObjectRef:
    return ObjectRef("NodeClaim", claim.name, uid=claim.metadata.uid)


class Executor:
    def __init__(self, cluster: Cluster, clock: Callable[[], datetime]) -> None:
        self._cluster, self._clock = cluster, clock

    # --- new commands ------------------------------------------------------------------------------
    def start(
        self,
        command: Command,
        nodepools: Mapping[str, NodePool],
        nodeclasses: Mapping[str, EC2NodeClass],
        outcome: Outcome,
    ) -> None:
        now = self._clock()
        expect = len(command.replacements)
        message = command.describe()
        for candidate in command.candidates:
            try:
                self._mark(candidate, command.reason, message, {"expect": expect, "replacements": []}, now)
            except ClusterError as error:
                outcome.failed[candidate.name] = f"marking: {error}"
                self._give_up(_targets(command), f"could not mark {candidate.name}: {error}", outcome)
                return
            outcome.started.append(candidate.name)
        if not command.replacements:
            self._delete(_targets(command), command.reason, outcome)
            return
        names = self._create_replacements(command, nodepools, nodeclasses, outcome)
        if names is None:
            return
        record = json.dumps({"expect": expect, "replacements": names})
        for candidate in command.candidates:
            self._cluster.record_event(
                Event(_claim_ref(candidate.claim), "DisruptionLaunching", f"Launching NodeClaim: {command.reason}")
            )
            try:
                self._cluster.patch_metadata(_claim_ref(candidate.claim), annotations={COMMAND: record})
            except ClusterError as error:  # the next pass finds the names missing and gives up
                outcome.failed[candidate.name] = f"recording replacements: {error}"
            outcome.waiting.append(candidate.name)

    def _mark(self, candidate: Candidate, reason: str, message: str, record: dict[str, Any], now: datetime) -> None:
        claim = candidate.claim
        self._cluster.patch_metadata(_claim_ref(claim), annotations={COMMAND: json.dumps(record)})
        status = claim.status or NodeClaimStatus()
        conditions = set_condition(status.conditions, DISRUPTION_REASON, "True", reason, message, now=now)
        stored = self._cluster.nodeclaim(claim.name) or claim
        self._cluster.write_status(
            stored.model_copy(
                update={"status": (stored.status or status).model_copy(update={"conditions": conditions})}
            )
        )
        taints = taints_with_disrupted(candidate.node)
        if taints is not None:
            self._cluster.set_node_taints(candidate.node_name, taints)

    def _create_replacements(
        self,
        command: Command,
        nodepools: Mapping[str, NodePool],
        nodeclasses: Mapping[str, EC2NodeClass],
        outcome: Outcome,
    ) -> list[str] | None:
        claims = []
        for new in command.replacements:
            nodepool = nodepools[new.nodepool]  # the simulation only schedules onto NodePools it was given
            nodeclass = nodeclasses.get(nodepool.spec.template.spec.node_class_ref.name)
            claim = to_nodeclaim(new, nodepool, nodeclass)
            annotations = {**(claim.metadata.annotations or {}), REPLACES: ",".join(c.name for c in command.candidates)}
            claims.append(
                claim.model_copy(update={"metadata": claim.metadata.model_copy(update={"annotations": annotations})})
            )
        names = []
        for result in each(self._cluster.create_nodeclaim, claims):
            if isinstance(result, ClusterError):
                self._give_up(_targets(command), f"creating a replacement failed: {result}", outcome)
                return None
            if isinstance(result, Exception):
                raise result
            names.append(result.name)
            outcome.created.append(result.name)
        return names

    # --- commands in flight ------------------------------------------------------------------------
    def advance(self, nodeclaims: Sequence[NodeClaim], nodes: Sequence[KubeObject], outcome: Outcome) -> None:
        """Delete the candidates whose replacements are up, give up those whose replacements failed."""
        now = self._clock()
        by_name = {c.name: c for c in nodeclaims}
        by_provider = nodes_by_provider_id(nodes)
        for claim in nodeclaims:
            node = (
                by_provider.get(claim.status.provider_id or "") if claim.status and claim.status.provider_id else None
            )
            if claim.metadata.deletion_timestamp:
                continue
            if not is_marked(claim):
                if node is not None and COMMAND not in (claim.metadata.annotations or {}):
                    self._remove_stray_taint(node, outcome)
                continue
            target = Target(claim, node or {})
            problem = self._problem(claim, by_name, now)
            if problem == "":
                outcome.waiting.append(claim.name)
            elif problem is None:
                reason = get_condition(claim.status.conditions if claim.status else None, DISRUPTION_REASON)
                self._delete([target], reason.reason if reason and reason.reason else "Disrupted", outcome)
            else:
                self._give_up([target], problem, outcome)

    def _problem(self, claim: NodeClaim, by_name: Mapping[str, NodeClaim], now: datetime) -> str | None:
        """None: go ahead and delete; "": keep waiting; otherwise why the command is given up."""
        record = _record(claim)
        if record is None:
            return "its disruption record is missing or unreadable"
        names = [str(n) for n in record["replacements"]]
        if len(names) < record["expect"]:
            return "its replacements were not all created"
        for name in names:
            replacement = by_name.get(name)
            if replacement is None or replacement.metadata.deletion_timestamp:
                return f"replacement {name} failed to launch or was deleted"
        if all(_initialized(by_name[n]) for n in names):
            return None
        condition = get_condition(claim.status.conditions if claim.status else None, DISRUPTION_REASON)
        started = parse_time(condition.last_transition_time if condition else None) or now
        if now - started > REPLACEMENT_TIMEOUT:
            return f"replacements {', '.join(names)} were not initialized within {REPLACEMENT_TIMEOUT}"
        return ""

    # --- endings -----------------------------------------------------------------------------------
    def delete(self, targets: Sequence[Target], reason: str, outcome: Outcome) -> None:
        """Delete the NodeClaims (termination drains them), with a ``DisruptionTerminating`` event each."""
        self._delete(targets, reason, outcome)

    def _delete(self, targets: Sequence[Target], reason: str, outcome: Outcome) -> None:
        for target in targets:
            self._cluster.record_event(
                Event(_claim_ref(target.claim), "DisruptionTerminating", f"Disrupting NodeClaim: {reason}")
            )
        results = each(lambda t: self._cluster.delete(_claim_ref(t.claim)), list(targets))
        for target, result in zip(targets, results, strict=True):
            if isinstance(result, ClusterError):
                outcome.failed[target.claim.name] = f"deleting: {result}"
            elif isinstance(result, Exception):
                raise result
            else:
                outcome.deleted[target.claim.name] = reason

    def _give_up(self, targets: Sequence[Target], why: str, outcome: Outcome) -> None:
        log.warning("giving up disrupting %s: %s", ", ".join(t.claim.name for t in targets), why)
        for target in targets:
            claim = target.claim
            try:
                self._cluster.patch_metadata(_claim_ref(claim), annotations={COMMAND: None})
                stored = self._cluster.nodeclaim(claim.name)
                if stored is not None and stored.status is not None and is_marked(stored):
                    kept = [c for c in stored.status.conditions or [] if c.type != DISRUPTION_REASON]
                    self._cluster.write_status(
                        stored.model_copy(update={"status": stored.status.model_copy(update={"conditions": kept})})
                    )
                name = node_name(target.node)
                node = self._cluster.get(ObjectRef("Node", name)) if name else None  # tainted since it was read
                if node is not None:
                    self._remove_stray_taint(node, outcome)
            except ClusterError as error:
                outcome.failed[claim.name] = f"giving up: {error}"
                continue
            outcome.abandoned[claim.name] = why
            self._cluster.record_event(Event(_claim_ref(claim), "DisruptionBlocked", why, "Warning"))

    def _remove_stray_taint(self, node: KubeObject, outcome: Outcome) -> None:
        taints = list((node.get("spec") or {}).get("taints") or ())
        kept = [t for t in taints if t.get("key") != wk.TAINT_DISRUPTED]
        if len(kept) == len(taints) or not node_name(node) or (node.get("metadata") or {}).get("deletionTimestamp"):
            return
        if (node.get("spec") or {}).get("unschedulable"):
            return  # cordoned by the interruption function, whose delete follows: not ours to undo
        try:
            self._cluster.set_node_taints(node_name(node), kept)
        except ClusterError as error:
            outcome.failed[node_name(node)] = f"removing the disrupted taint: {error}"


def _targets(command: Command) -> list[Target]:
    return [Target(c.claim, c.node) for c in command.candidates]


def _initialized(claim: NodeClaim) -> bool:
    return is_true(claim.status.conditions if claim.status else None, INITIALIZED)
