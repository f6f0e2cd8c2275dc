"""``autoscaler plan --disruption``: what the next disruption pass would do to each node, and what holds the rest.

The disruption controller's own ``assess()`` runs over the cluster ``plan`` reads (embedded or real); it reads
and decides but writes nothing. ``-o json`` prints one object:

- ``nodes``: one entry per node (every NodeClaim with a Node, and every node disruption found ineligible), each
  ``{node, nodeClaim, nodePool, instanceType, capacityType, reservation, pricePerHour, static, bufferPods, action,
  reason, drifted, driftUnknown, consolidatable}``. ``pricePerHour`` is what consolidation compares (a reserved
  node's is Karpenter's, on-demand / 10,000,000: its reservation is paid for anyway), null when the node is not a
  candidate or its type is no longer offered; ``static``: its NodePool keeps ``spec.replicas`` (consolidation leaves
  it); ``bufferPods``: the CapacityBuffers' virtual pods it holds room for (demand: the node is not empty).
  ``action`` is ``expire``, ``repair`` (node repair), ``delete`` or ``replace`` (taken by this pass's command),
  ``blocked`` (a method passed over it, or node repair is held: ``reason`` says why, e.g. a budget, a PDB,
  do-not-disrupt, not cheaper), ``ineligible``
  (not a candidate: ``reason`` says why), ``waiting`` (a candidate not reached: another command goes first) or
  ``none`` (nothing to do). ``drifted`` is the Drifted reason and message or null; ``driftUnknown`` why the
  provider could not tell, or null. ``score`` (NodePools with ``consolidationPolicy: Balanced`` only, else null):
  the Balanced score of the move that takes the node (for this pass's command) or of deleting it (the most any
  move of it can score), with ``threshold`` (0.5) beside it.
- ``command``: the pass's command or null: ``{description, reason, consolidationType, decision, nodes,
  replacements: [{instanceTypes, pricePerHour}], savingsPerHour, scores: {nodePool: score}}``.
- ``budgets``: per NodePool and reason, ``{nodePool, reason, allowed, limit, disrupting, blocking}``.
- ``static``: per static NodePool (StaticCapacity gate), ``{replicas, running, pendingDisruption, deleting}``.
- ``eligible`` (reason -> candidates before budgets), ``expired`` (NodeClaim names), ``decisionSeconds``
  (method -> seconds) and ``skippedNodePools`` (name -> why no instance types were known for it).
- ``recentCommands``: the savings ledger of every NodePool (the last commands that completed, oldest first), each
  ``{nodePool, reason, nodes, replacements, predictedPerHour, realizedPerHour, displacedPods, started, completed}``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.conditions import get_condition
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.crds.columns import format_table
from autoscaler.kube.objects import Node
from autoscaler.kube.port import Cluster

if TYPE_CHECKING:  # the controllers are imported when the command runs, not when the CLI starts
    from autoscaler.controllers.disruption import Assessment
    from autoscaler.controllers.disruption.candidates import Candidate
    from autoscaler.controllers.disruption.methods import Command

SHOWN_OPTIONS = 3


def assess(
    cluster: Cluster, provider: Any, index: Any, *, buffers: bool = False, overlays: bool = False
) -> DisruptionPlan:
    """One disruption decision over ``cluster``, read-only: no lease is taken and nothing is written; ``buffers``:
    the CapacityBuffer gate is on (buffers count as demand); ``overlays``: the NodeOverlay gate is on (prices as
    overlaid)."""
    from autoscaler.controllers.disruption import DisruptionController

    controller = DisruptionController(
        cluster,
        provider,
        provider.aws.unavailable,
        leases=None,
        nodeclasses=index,
        capacity_buffers=buffers,
        node_overlays=overlays,
    )
    return DisruptionPlan(controller.assess())


def _options(names: Sequence[str]) -> str:
    return "/".join(names[:SHOWN_OPTIONS]) + ("/..." if len(names) > SHOWN_OPTIONS else "")


@dataclass
class DisruptionPlan:
    """The assessment, turned into one row per node (as ``nodes`` of the JSON)."""

    assessment: Assessment

    @property
    def skipped_nodepools(self) -> dict[str, str]:
        return dict(self.assessment.skipped_nodepools)

    def nodes(self) -> list[dict[str, Any]]:
        found = self.assessment
        expired = {c.name for c in found.expired}
        command = found.decisions.command
        taken = {c.node_name for c in command.candidates} if command else set()
        rows: dict[str, dict[str, Any]] = {}
        candidates = {c.node_name: c for c in found.candidates.candidates}
        for claim in found.claims:
            node = found.node_of(claim)
            if node is None:
                continue
            name = Node(node).name
            rows[name] = {**self._row(name, claim, expired, taken), **_capacity(claim, candidates.get(name), found)}
        for name, why in found.candidates.ineligible.items():
            if name not in rows:
                rows[name] = {**_empty_row(name), "action": "ineligible", "reason": why}
        return [rows[name] for name in sorted(rows)]

    def _row(self, name: str, claim: NodeClaim, expired: set[str], taken: set[str]) -> dict[str, Any]:
        found = self.assessment
        decisions = found.decisions
        labels = claim.metadata.labels or {}
        conditions = claim.status.conditions if claim.status else None
        drift = get_condition(conditions, "Drifted")
        consolidatable = get_condition(conditions, "Consolidatable")
        row = {
            "node": name,
            "nodeClaim": claim.name,
            "nodePool": labels.get(wk.LABEL_NODEPOOL, ""),
            "instanceType": labels.get(wk.LABEL_INSTANCE_TYPE, ""),
            "drifted": f"{drift.reason}: {drift.message}".rstrip(": ") if drift and drift.status == "True" else None,
            "driftUnknown": found.drift_errors.get(claim.name),
            "consolidatable": bool(consolidatable and consolidatable.status == "True"),
        }
        repairs = found.repairs
        due = {r.claim.name: r.condition_type for r in repairs.due}
        if claim.name in expired:
            action, reason = "expire", "past its expireAfter (forceful: no budget, PDB or do-not-disrupt holds it)"
        elif claim.name in due:
            action, reason = "repair", f"{due[claim.name]} unhealthy past its toleration (forceful, as expiration)"
        elif name in repairs.blocked:
            action, reason = "blocked", f"repair held: {repairs.blocked[name]}"
        elif name in taken and decisions.command is not None:
            action, reason = self._taken(row, decisions.command)
        elif name in decisions.blocked:
            action, reason = "blocked", decisions.blocked[name]
        elif name in found.candidates.ineligible:
            action, reason = "ineligible", found.candidates.ineligible[name]
        elif decisions.command is not None:
            action, reason = "waiting", f"not reached: this pass's {decisions.command.reason} command goes first"
        else:
            action, reason = "none", "no method disrupts it now"
        return {**row, "action": action, "reason": reason, **self._score(name, str(row["nodePool"] or ""), taken)}

    def _score(self, name: str, pool: str, taken: set[str]) -> dict[str, Any]:
        """The Balanced score shown for the node: its command's, else deleting it alone; null when not scored."""
        from autoscaler.controllers.disruption.balanced import best_case

        command = self.assessment.decisions.command
        found = command.scores.get(pool) if command is not None and name in taken else None
        if found is None:
            candidate = next((c for c in self.assessment.candidates.candidates if c.node_name == name), None)
            found = best_case(candidate, self.assessment.totals) if candidate is not None else None
        if found is None:
            return {"score": None, "threshold": None}
        return {"score": round(found.value, 4), "threshold": found.threshold}

    @staticmethod
    def _taken(row: Mapping[str, Any], command: Command) -> tuple[str, str]:
        kind = command.reason
        if command.consolidation_type:
            kind += f", {command.consolidation_type}"
        elif row["drifted"]:
            kind = f"Drifted: {row['drifted']}"
        text = f"{command.decision} ({kind})"
        if command.replacements:
            text += " with " + ", ".join(_options([o.name for o in r.instance_types]) for r in command.replacements)
        if command.consolidation_type and command.savings is not None:
            text += f", saving ${command.savings:.4f}/h"
        return command.decision, text

    def command(self) -> dict[str, Any] | None:
        command = self.assessment.decisions.command
        if command is None:
            return None
        return {
            "description": command.describe(),
            "reason": command.reason,
            "consolidationType": command.consolidation_type or None,
            "decision": command.decision,
            "nodes": [c.node_name for c in command.candidates],
            "replacements": [
                {"instanceTypes": [o.name for o in r.instance_types], "pricePerHour": round(r.cheapest_price, 6)}
                for r in command.replacements
            ],
            "savingsPerHour": round(command.savings, 6) if command.savings is not None else None,
            "scores": {pool: round(found.value, 4) for pool, found in sorted(command.scores.items())},
        }

    def budgets(self) -> list[dict[str, Any]]:
        return [
            {
                "nodePool": pool,
                "reason": reason,
                "allowed": verdict.allowed,
                "limit": verdict.limit,
                "disrupting": verdict.disrupting,
                "blocking": verdict.blocking,
            }
            for (pool, reason), verdict in sorted(self.assessment.decisions.budgets.items())
        ]

    def as_dict(self) -> dict[str, Any]:
        decisions = self.assessment.decisions
        return {
            "nodes": self.nodes(),
            "command": self.command(),
            "budgets": self.budgets(),
            "eligible": dict(decisions.eligible),
            "expired": [c.name for c in self.assessment.expired],
            "decisionSeconds": {k: round(v, 4) for k, v in decisions.seconds.items()},
            "skippedNodePools": self.skipped_nodepools,
            "static": self.static(),
            "recentCommands": self.recent_commands(),
        }

    def static(self) -> dict[str, dict[str, Any]]:
        """Per static NodePool: its replicas and NodeClaims running, being replaced (drift) and being deleted."""
        return {
            pool: {
                "replicas": self.assessment.nodepools[pool].spec.replicas,
                "running": found.running,
                "pendingDisruption": found.pending_disruption,
                "deleting": found.deleting,
            }
            for pool, found in sorted(self.assessment.static.items())
        }

    def recent_commands(self) -> list[dict[str, Any]]:
        from autoscaler.controllers.disruption.ledger import read_ledger

        rows = [
            {
                "nodePool": pool.name,
                "reason": e.reason,
                "nodes": list(e.nodes),
                "replacements": list(e.replacements),
                "predictedPerHour": e.predicted,
                "realizedPerHour": e.realized,
                "displacedPods": e.displaced,
                "started": e.started.isoformat(),
                "completed": e.completed.isoformat(),
            }
            for pool in self.assessment.state.nodepools
            for e in read_ledger(pool)
        ]
        return sorted(rows, key=lambda r: r["completed"])


def _capacity(claim: NodeClaim, candidate: Candidate | None, found: Assessment) -> dict[str, Any]:
    """What a node's capacity is and costs as disruption sees it: its capacity type and reservation, the price
    consolidation compares, whether its NodePool is static, and the buffers' virtual pods it holds room for."""
    labels = claim.metadata.labels or {}
    price = candidate.price if candidate is not None else None
    return {
        "capacityType": labels.get(wk.LABEL_CAPACITY_TYPE),
        "reservation": labels.get(wk.LABEL_CAPACITY_RESERVATION_ID),
        "pricePerHour": price,
        "static": labels.get(wk.LABEL_NODEPOOL, "") in found.static,
        "bufferPods": len(candidate.buffer_pods) if candidate is not None else 0,
    }


def _empty_row(name: str) -> dict[str, Any]:
    keys = (
        *("nodeClaim", "nodePool", "instanceType", "capacityType", "reservation", "pricePerHour"),
        *("drifted", "driftUnknown", "score", "threshold"),
    )
    return dict.fromkeys(keys, None) | {
        "node": name,
        "consolidatable": False,
        "static": False,
        "bufferPods": 0,
    }


def _money(value: float | None) -> str:
    """Four decimals, or three significant digits below a hundredth of a cent (a reserved node's price)."""
    if value is None:
        return "-"
    return f"${value:.3g}/h" if 0 < value < 0.0001 else f"${value:.4f}/h"


def _capacity_text(row: Mapping[str, Any]) -> str:
    """Capacity type, the reservation, and what keeps the node besides its pods (a static pool, buffer room)."""
    text = row["capacityType"] or "-"
    if row["reservation"]:
        text += f" {row['reservation']}"
    if row["static"]:
        text += ", static"
    if row["bufferPods"]:
        text += f", buffer room {row['bufferPods']}"
    return text


def render(plan: DisruptionPlan) -> str:
    """Nodes with their next action or blocker, the command, and the budgets per NodePool and reason."""
    sections = []
    nodes = plan.nodes()
    if nodes:
        rows = [
            [
                n["node"],
                n["nodePool"] or "-",
                n["instanceType"] or "-",
                _capacity_text(n),
                _money(n["pricePerHour"]),
                (n["drifted"] or "").split(":", 1)[0] or ("unknown" if n["driftUnknown"] else "-"),
                "yes" if n["consolidatable"] else "no",
                "-" if n["score"] is None else f"{n['score']:.2f}",
                n["action"],
                n["reason"],
            ]
            for n in nodes
        ]
        headers = ["NODE", "NODEPOOL", "TYPE", "CAPACITY", "PRICE", "DRIFTED", "CONSOLIDATABLE", "SCORE", "ACTION"]
        headers.append("REASON")
        sections.append(format_table(headers, rows))
    drifts = [f"{n['node']}: drifted, {n['drifted']}" for n in nodes if n["drifted"]]
    drifts += [f"{n['node']}: drift unknown, {n['driftUnknown']}" for n in nodes if n["driftUnknown"]]
    if drifts:
        sections.append("\n".join(drifts))
    budgets = plan.budgets()
    if budgets:
        rows = [
            [
                b["nodePool"],
                b["reason"],
                str(b["allowed"]),
                "-" if b["limit"] is None else str(b["limit"]),
                str(b["disrupting"]),
                b["blocking"] or "",
            ]
            for b in budgets
        ]
        sections.append(format_table(["NODEPOOL", "REASON", "ALLOWED", "LIMIT", "DISRUPTING", "BLOCKING"], rows))
    static = plan.static()
    if static:
        rows = [
            [pool, str(s["replicas"]), str(s["running"]), str(s["pendingDisruption"]), str(s["deleting"])]
            for pool, s in static.items()
        ]
        headers = ["STATIC NODEPOOL", "REPLICAS", "RUNNING", "BEING REPLACED", "DELETING"]
        sections.append(
            "static NodePools (consolidation leaves them; drift replaces within budgets):\n"
            + format_table(headers, rows)
        )
    recent = plan.recent_commands()
    if recent:
        rows = [
            [
                r["completed"][:16].replace("T", " "),
                r["nodePool"],
                r["reason"],
                ", ".join(r["nodes"]),
                _money(r["predictedPerHour"]),
                _money(r["realizedPerHour"]),
                str(r["displacedPods"]),
            ]
            for r in recent
        ]
        headers = ["COMPLETED", "NODEPOOL", "REASON", "NODES", "PREDICTED", "REALIZED", "DISPLACED"]
        sections.append("recent commands (savings ledger):\n" + format_table(headers, rows))
    command = plan.command()
    expired = plan.assessment.expired
    summary = f"next pass: {command['description'] if command else 'no command'}"
    if expired:
        summary += f"; {len(expired)} NodeClaims expire"
    sections.append(f"{summary} ({len(nodes)} nodes)")
    return "\n\n".join(sections)
