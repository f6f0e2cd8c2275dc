"""One pass of the disruption function (Karpenter's disruption controller and NodeClaim disruption conditions).

1. read the cluster once and assess it (``assessment``): conditions, expirations, candidates, decisions;
2. write each NodeClaim's Drifted / Consolidatable conditions and lastPodEventTime where they changed;
3. delete expired NodeClaims (forceful: no budget, do-not-disrupt or PDB holds expiration, as in v1);
4. advance the commands earlier passes started (the replacement orchestrator, ``controllers.orchestration``,
   with the disruption reasons' policies);
5. start this pass's command, if a method found one: the orchestrator creates its replacements first.

Every step reads before it writes, so a repeated or interrupted pass converges (docs/disruption.md).
"""

from __future__ import annotations

import logging
import math
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from autoscaler import metrics as m
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.conditions import get_condition
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.clock import utc_now
from autoscaler.cloudprovider.lease import Leases, holding
from autoscaler.cloudprovider.port import UnavailableOfferings
from autoscaler.cloudprovider.repair import RepairPolicy
from autoscaler.controllers.buffers import read_buffers
from autoscaler.controllers.disruption.assessment import Assessment, Assessor, DisruptionCloud, applied
from autoscaler.controllers.disruption.balanced_metrics import balanced_metric_points
from autoscaler.controllers.disruption.conditions import DRIFTED, POD_DIGEST, ClaimStatus
from autoscaler.controllers.disruption.ledger import LEDGER, LedgerEntry, completed, with_entries
from autoscaler.controllers.disruption.methods import Command
from autoscaler.controllers.disruption.repair import UNHEALTHY
from autoscaler.controllers.disruption.repair_execution import repair, repair_metric_points
from autoscaler.controllers.disruption.revalidation import revalidate
from autoscaler.controllers.disruption.verification import PlacementCheck, check_placements
from autoscaler.controllers.orchestration import DISRUPTION_POLICIES, Orchestrator, Outcome, Replacement, Target
from autoscaler.controllers.orchestration import Command as Order
from autoscaler.controllers.orchestration.command import record_or_none
from autoscaler.controllers.orchestration.record import CommandRecord, CommandState, LedgerFigures, new_record
from autoscaler.controllers.overlays import evaluate_overlays, read_overlays
from autoscaler.controllers.provisioning.nodeclaims import to_nodeclaim
from autoscaler.controllers.state import ClusterState, NodeClassIndex
from autoscaler.controllers.zonalshift import read_error_points
from autoscaler.kube.port import Cluster, ClusterError
from autoscaler.metrics import MetricPoint
from autoscaler.settings import DISRUPTION_LEASE, DISRUPTION_LEASE_SECONDS

log = logging.getLogger(__name__)
EXPIRED = "Expired"
RESERVE_SECONDS = 30.0  # kept for the writes after deciding: methods stop deciding when less is left


@dataclass
class DisruptionResult:
    assessment: Assessment
    outcome: Outcome
    seconds: float = 0.0
    written: int = 0
    newly_drifted: dict[str, str] = field(default_factory=dict)  # NodeClaim -> Drifted reason
    write_failures: dict[str, str] = field(default_factory=dict)
    ledger: list[LedgerEntry] = field(default_factory=list)  # commands completed this pass
    revalidation: str | None = None  # why the decided command was not started after all
    zonal_shift_read_errors: int = 0  # ARC reads that failed since the previous pass (its offerings' and launches')

    def summary(self) -> dict[str, Any]:
        decisions = self.assessment.decisions
        command = decisions.command
        return {
            "seconds": round(self.seconds, 3),
            "nodeclaims": len(self.assessment.claims),
            "conditions_written": self.written,
            "newly_drifted": self.newly_drifted,
            "expired": [c.name for c in self.assessment.expired],
            "command": command.describe() if command else None,
            "started": self.outcome.started,
            "replacements_created": self.outcome.created_names,
            "deleted": self.outcome.deleted,
            "waiting": list(self.outcome.waiting),
            "abandoned": self.outcome.abandoned,
            "failed": {**self.write_failures, **self.outcome.failed},
            "decision_seconds": {k: round(v, 3) for k, v in decisions.seconds.items()},
            "completed": [e.line() for e in self.ledger],
            "failed_validations": [why for _, why in self._failed_validations()],
            "zonal_shift_read_errors": self.zonal_shift_read_errors,
        }

    def _failed_validations(self) -> list[tuple[str, str]]:
        found = self.assessment.decisions.failed_validations
        command = self.assessment.decisions.command
        if self.revalidation is None or command is None:
            return list(found)
        return [*found, (command.consolidation_type or "none", f"re-validation: {self.revalidation}")]

    def metric_points(self) -> list[MetricPoint]:
        found = self.assessment
        points = [
            MetricPoint(m.NODECLAIMS_DRIFTED, count, dimensions=(("nodepool", pool), ("type", reason)))
            for (pool, reason), count in sorted(Counter(self._drifted_by_pool()).items())
        ]
        by_name = {c.name: c for c in found.claims}
        deleted = Counter(
            (reason.lower(), *_pool_and_capacity(by_name.get(name))) for name, reason in self.outcome.deleted.items()
        )
        points += [
            MetricPoint(
                m.NODECLAIMS_DISRUPTED,
                count,
                dimensions=(("capacity_type", capacity), ("nodepool", pool), ("reason", reason)),
            )
            for (reason, pool, capacity), count in sorted(deleted.items())
        ]
        points += [
            MetricPoint(m.NODEPOOLS_ALLOWED_DISRUPTIONS, verdict.allowed, dimensions=(("nodepool", p), ("reason", r)))
            for (p, r), verdict in sorted(found.decisions.budgets.items())
        ]
        points += [
            MetricPoint(m.DISRUPTION_ELIGIBLE_NODES, count, dimensions=(("reason", reason),))
            for reason, count in sorted(found.decisions.eligible.items())
        ]
        points += [
            MetricPoint(m.DISRUPTION_EVALUATION_DURATION, seconds, "Seconds", (("method", method),))
            for method, seconds in found.decisions.seconds.items()
        ]
        command = found.decisions.command
        if command is not None and self.outcome.started:
            dimensions = (
                ("consolidation_type", command.consolidation_type or "none"),
                ("decision", command.decision),
                ("reason", command.reason.lower()),
            )
            points.append(MetricPoint(m.DISRUPTION_DECISIONS, 1, dimensions=dimensions))
            kind = (("consolidation_type", command.consolidation_type or "none"), ("reason", command.reason.lower()))
            if command.savings is not None:
                points.append(MetricPoint(m.DISRUPTION_PREDICTED_SAVINGS, command.savings, "None", kind))
            displaced = sum(len(c.pods) for c in command.candidates)
            points.append(MetricPoint(m.DISRUPTION_DISPLACED_PODS, displaced, dimensions=kind))
        for entry in self.ledger:
            if entry.realized is not None:
                reason = (("reason", entry.reason.lower()),)
                points.append(MetricPoint(m.DISRUPTION_REALIZED_SAVINGS, entry.realized, "None", reason))
        points += repair_metric_points(self.assessment.repairs, self.outcome)
        points += balanced_metric_points(found.decisions, bool(self.outcome.started))
        failed = Counter(kind for kind, _ in self._failed_validations())
        points += [
            MetricPoint(m.DISRUPTION_FAILED_VALIDATIONS, count, dimensions=(("consolidation_type", kind),))
            for kind, count in sorted(failed.items())
        ]
        ended = Counter("failed" for _ in self.outcome.abandoned)
        ended["succeeded"] = sum(1 for reason in self.outcome.deleted.values() if reason not in (EXPIRED, UNHEALTHY))
        points += [
            MetricPoint(m.DISRUPTION_COMMANDS_ENDED, count, dimensions=(("outcome", outcome),))
            for outcome, count in sorted(ended.items())
        ]
        points += read_error_points(self.zonal_shift_read_errors)
        return points

    def _drifted_by_pool(self) -> list[tuple[str, str]]:
        by_name = {c.name: c for c in self.assessment.claims}
        return [(_pool_and_capacity(by_name.get(name))[0], reason) for name, reason in self.newly_drifted.items()]


def _pool_and_capacity(claim: NodeClaim | None) -> tuple[str, str]:
    labels = (claim.metadata.labels or {}) if claim else {}
    return labels.get(wk.LABEL_NODEPOOL, ""), labels.get(wk.LABEL_CAPACITY_TYPE, "")


class DisruptionController:
    def __init__(
        self,
        cluster: Cluster,
        cloud: DisruptionCloud,
        unavailable: UnavailableOfferings,
        *,
        clock: Callable[[], datetime] = utc_now,
        leases: Leases | None = None,
        nodeclasses: NodeClassIndex | None = None,
        spot_to_spot: bool = False,
        timer: Callable[[], float] = time.perf_counter,
        placement_checks: Sequence[PlacementCheck] = (check_placements,),
        capacity_buffers: bool = False,
        repair_policies: Sequence[RepairPolicy] = (),
        node_overlays: bool = False,
    ) -> None:
        """``capacity_buffers``: the CapacityBuffer gate; with it, buffers' virtual pods count as demand.
        ``node_overlays``: the NodeOverlay gate; with it, candidates and replacements are priced as overlaid."""
        self._cluster, self._clock, self._timer, self._leases = cluster, clock, timer, leases
        self._buffers, self._overlays, self._cloud = capacity_buffers, node_overlays, cloud
        self._nodeclasses = nodeclasses
        self._unavailable, self._spot_to_spot, self._checks = unavailable, spot_to_spot, tuple(placement_checks)
        self.assessor = Assessor(
            cloud,
            unavailable,
            spot_to_spot=spot_to_spot,
            timer=timer,
            checks=placement_checks,
            repair_policies=repair_policies,
        )
        self.orchestrator = Orchestrator(cluster, clock, DISRUPTION_POLICIES, clean_up=True)

    def assess(self, time_left: Callable[[], float] = lambda: math.inf) -> Assessment:
        """Read the cluster and decide, writing nothing (``autoscaler plan --disruption``)."""
        state = ClusterState.read(self._cluster)
        if self._buffers:
            state.buffer_pods = read_buffers(self._cluster).pods
        if self._nodeclasses is not None:
            self._nodeclasses.update(state.nodeclasses)
        if self._overlays:
            evaluate_overlays(state, self._cloud, read_overlays(self._cluster), self._clock())
        return self.assessor.assess(state, self._cluster.pod_disruption_budgets(), self._clock(), time_left)

    def run(self, holder: str = "local", time_left: Callable[[], float] = lambda: math.inf) -> DisruptionResult | None:
        """One pass under the disruption lease (None when another pass holds it); ``holder`` names this one."""
        with holding(self._leases, DISRUPTION_LEASE, holder, timedelta(seconds=DISRUPTION_LEASE_SECONDS)) as held:
            if not held:
                log.info("another disruption pass holds the lease; skipping")
                return None
            return self._run(lambda: time_left() - RESERVE_SECONDS)

    def _run(self, time_left: Callable[[], float]) -> DisruptionResult:
        started = self._timer()
        found = self.assess(time_left)
        result = DisruptionResult(found, Outcome())
        by_name = {c.name: c for c in found.state.nodeclaims}
        for name, wanted in found.statuses.items():
            self._write(by_name[name], wanted, result)
        expired = [Target(c, found.node_of(c) or {}) for c in found.expired]
        if expired:
            names = [t.claim.name for t in expired]
            log.info(
                "%d NodeClaims expired: %s",
                len(expired),
                ", ".join(names),
                extra={"decision": "expired", "nodeclaims": names},
            )
            self.orchestrator.delete(expired, EXPIRED, result.outcome)
        repair(self._cluster, self.orchestrator, found.repairs, self._clock(), result.outcome)
        skip = {c.name for c in found.expired} | {r.claim.name for r in found.repairs.due}
        live = [c for c in found.claims if c.name not in skip]
        self.orchestrator.advance(live, found.state.nodes, result.outcome)
        by_name = {c.name: c for c in live}
        done = [(by_name[n], record_or_none(by_name[n])) for n in result.outcome.deleted if n in by_name]
        for kind, why in found.decisions.failed_validations:
            log.warning("a %s consolidation was not proposed: %s", kind, why)
        if found.decisions.blocked:
            log.info(
                "%d nodes not disrupted this pass",
                len(found.decisions.blocked),
                extra={"decision": "not-disrupted", "blocked": dict(list(found.decisions.blocked.items())[:50])},
            )
        command = self._revalidated(found, result)
        if command is not None:
            log.info("disrupting: %s", command.describe(), extra={"decision": "disrupting", **command.fields()})
            order = _order(command, found)
            self.orchestrator.start(order, result.outcome)
            if not order.replacements:  # deleted at once: complete already
                now = self._clock()
                done += [
                    (t.claim, new_record(order.reason, 0, now, CommandState.REPLACING, ledger=order.ledger.get(t.name)))
                    for t in order.candidates
                    if t.name in result.outcome.deleted
                ]
        self._record_ledger(done, found, result)
        # The pass read ARC for its offerings (cached 30 s): its failures are counted as the provisioner counts its own.
        result.zonal_shift_read_errors = self._cloud.shifted_zones().read_errors
        result.seconds = self._timer() - started
        return result

    def _revalidated(self, found: Assessment, result: DisruptionResult) -> Command | None:
        """The decided command, checked again on the pods as they are now (``revalidation``); None when it no
        longer holds."""
        command = found.decisions.command
        if command is None or not command.consolidation_type:
            return command
        checked = revalidate(
            found,
            command,
            self._cluster.pods(),
            self._cluster.pending_pods(),
            self._clock(),
            unavailable=self._unavailable.unavailable(),
            spot_to_spot=self._spot_to_spot,
            checks=self._checks,
        )
        if isinstance(checked, str):
            result.revalidation = checked
            log.warning("not disrupting after all (re-validation): %s; decided: %s", checked, command.describe())
            return None
        return checked

    def _record_ledger(
        self, done: list[tuple[NodeClaim, CommandRecord | None]], found: Assessment, result: DisruptionResult
    ) -> None:
        """Each completed command's entry on its NodePool (``ledger``), newest last."""
        by_pool: dict[str, list[LedgerEntry]] = {}
        for pool, entry in completed(done, found.claims, found.instance_types, self._clock()):
            by_pool.setdefault(pool, []).append(entry)
            result.ledger.append(entry)
            log.info("command completed: %s", entry.line())
        for pool_name, entries in by_pool.items():
            nodepool = found.nodepools.get(pool_name)
            if nodepool is None:
                continue
            try:
                self._cluster.patch_metadata(nodepool.ref, annotations={LEDGER: with_entries(nodepool, entries)})
            except ClusterError as error:  # the entries are in the logs and metrics; the NodePool misses them
                result.write_failures[f"nodepool/{pool_name}"] = f"writing the savings ledger: {error}"

    def _write(self, claim: NodeClaim, wanted: ClaimStatus, result: DisruptionResult) -> None:
        status_changed, digest_changed = wanted.differs(claim)
        before = get_condition(claim.status.conditions if claim.status else None, DRIFTED)
        after = get_condition(wanted.conditions, DRIFTED)
        try:
            if status_changed:
                self._cluster.write_status(applied(claim, wanted))
                result.written += 1
            if digest_changed:
                self._cluster.patch_metadata(claim.ref, annotations={POD_DIGEST: wanted.digest})
        except ClusterError as error:  # a conflict included: the next pass decides from fresh state
            result.write_failures[claim.name] = f"writing conditions: {error}"
            return
        if after is not None and before is None:
            result.newly_drifted[claim.name] = after.reason or DRIFTED
            log.info("NodeClaim %s drifted (%s): %s", claim.name, after.reason, after.message)


def _order(command: Command, found: Assessment) -> Order:
    """The orchestrator's command for a method's decision: every replacement stands in for every candidate
    (their pods were rescheduled together), created as the provisioner creates NodeClaims."""
    names = tuple(c.name for c in command.candidates)
    replacements = []
    for new in command.replacements:
        nodepool = found.nodepools[new.nodepool]  # the rescheduling only schedules onto NodePools it was given
        nodeclass = found.state.nodeclass(nodepool.spec.template.spec.node_class_ref.name)
        replacements.append(Replacement(to_nodeclaim(new, nodepool, nodeclass), names))
    targets = [Target(c.claim, c.node) for c in command.candidates]
    saving = command.savings
    ledger = {
        c.name: LedgerFigures(saving=None if saving is None else round(saving, 6), price=c.price, displaced=len(c.pods))
        for c in command.candidates
    }
    return Order(command.reason, targets, replacements, command.describe(), ledger)
