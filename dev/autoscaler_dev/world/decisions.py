"""Decision quality: the invariants that judge what the autoscaler chose rather than whether it stayed safe, and the
churn figures of a run. Watched at every sample (30 virtual seconds), from what a user would see in the cluster.

Invariants (counted with the safety ones in the summary's ``invariants``):

- ``launched_unused``: a NodeClaim created while pods were pending that initializes and has no pod bound to its
  node within ``UNUSED_SECONDS`` (deleted unused before that counts too); not a static NodePool's, launched for its
  replicas whatever the pods need, nor one whose nominated pods were all deleted before any was bound anywhere
  (the demand went away: a workload scaled down, and Kubernetes deletes pending pods first), nor one that was
  waiting for its launch when EC2 refused capacity (``plan_cut``): the plan it was part of lost NodeClaims its pods
  were packed beside, e.g. the other zones of a zonal spread, so the kube-scheduler may rightly bind none there;
- ``consolidation_without_saving``: a completed Empty or Underutilized command (the savings ledger on the NodePools)
  whose realized saving is not positive;
- ``displaced_pod_unplaced``: a pod evicted from a node a disruption command took whose successor (the next pod its
  workload creates, first pending after the eviction) waits more than ``UNPLACED_SECONDS`` for a node, less EC2's
  refusals of its capacity (the excuse ``pod_pending_too_long`` gives), or a pod without a controller so evicted (no
  successor ever comes);
- ``replaced_too_soon``: a node marked for consolidation sooner than its NodePool's ``consolidateAfter`` after it
  initialized.

Figures (summary keys): ``evictions_per_hour`` by reason (the DisruptionReason of the pod's NodeClaim, ``Interrupted``
for a spot reclaim, ``Expired`` or ``Deleted`` otherwise), ``node_lifetime_median_s`` and ``node_lifetime_p10_s``
(initialization to deletion, NodeClaims deleted during the run), ``launches_per_hour``, ``savings_predicted`` and
``savings_realized`` ($/hour summed over completed commands), ``ledger_commands`` and ``displaced_pending_max_s``.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from autoscaler.apis.duration import parse_nillable
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.nodeclaim import INITIALIZED
from autoscaler.apis.v1.nodepool import NodePool
from autoscaler.clock import parse_time
from autoscaler.controllers.disruption.ledger import LedgerEntry, read_ledger
from autoscaler.controllers.orchestration.record import DISRUPTION_REASON
from autoscaler.controllers.state.inflight import nominated_in
from autoscaler.kube.objects import Body, Pod

if TYPE_CHECKING:
    from autoscaler_dev.world.runner import World

UNUSED_SECONDS = 5 * 60
UNPLACED_SECONDS = 5 * 60
CONSOLIDATION = ("Empty", "Underutilized")
DISRUPTION = ("Empty", "Underutilized", "Drifted")
NAMES = ("launched_unused", "consolidation_without_saving", "displaced_pod_unplaced", "replaced_too_soon")
Violation = Callable[[str, str, str], None]  # (invariant, subject, text)


@dataclass
class _Claim:
    created: float
    wanted: bool  # pods were pending when it was created
    initialized: float | None = None
    used: bool = False
    deleted: float | None = None
    nominated: set[str] = field(default_factory=set)  # pod UIDs the provisioner packed onto it
    cut: bool = False  # EC2 refused capacity while it waited for its launch


@dataclass
class _Displaced:
    owner: str  # the workload's controller UID ("" for a pod without one)
    evicted: float
    after: float  # the sample before the eviction: a pod pending since then was there before it, not its successor
    successor: str | None = None  # the successor pod's UID
    since: float | None = None  # when the successor was first seen pending


class DecisionQuality:
    def __init__(self, sim: World) -> None:
        self.sim = sim
        self._claims: dict[str, _Claim] = {}
        self._pods: dict[str, tuple[str, str]] = {}  # bound pod UID -> (node name, owner UID) at the last sample
        self._evictions: Counter[str] = Counter()
        self._displaced: list[_Displaced] = []
        self._taken: set[str] = set()  # successor pods already matched
        self._ledger: dict[tuple[str, str, str], LedgerEntry] = {}
        self._marked: set[str] = set()
        self._node_reasons: dict[str, str] = {}  # node -> why its NodeClaim was going, as last seen
        self._pending_max = 0.0
        self._alive: set[str] = set()  # pod UIDs at the last sample
        self._pending_since: dict[str, float] = {}  # pending pod UID -> the sample it was first seen pending at
        self._sampled = float("-inf")  # the last sample's time
        self._ever_bound: set[str] = set()

    def plan_cut(self, waiting: set[str]) -> None:
        """EC2 refused capacity while the NodeClaims ``waiting`` (names) waited for their launch."""
        for name in waiting:
            self._claims.setdefault(name, _Claim(self.sim.clock.elapsed, wanted=True)).cut = True

    # --- every sample ----------------------------------------------------------------------------
    def check(self, violation: Violation, waited: Mapping[str, float] | None = None) -> None:
        """One sample. ``waited``: how long each pending pod (UID) has waited, less EC2's refusals of its capacity
        (``world/pending.py``, as ``pod_pending_too_long`` judges it); the plain wall time when not given."""
        now = self.sim.clock.elapsed
        pods = self.sim.kube.list("v1", "Pod")
        claims = [Body(c) for c in self.sim.kube.list(wk.API_VERSION, "NodeClaim")]
        pending = [p for p in pods if not Pod(p).node_name and not Pod(p).deleting]
        node_claims = {str(c.status.get("nodeName") or ""): c for c in claims if c.status.get("nodeName")}
        static = {name for name, pool in self._nodepools().items() if pool.spec.replicas is not None}
        self._watch_claims(claims, pods, bool(pending), now, violation, static=static)
        self._watch_evictions(pods, node_claims, now, violation)
        self._watch_successors(pending, now, violation, waited or {})
        self._sampled = now
        self._watch_marks(claims, violation)
        self._watch_ledger(violation)

    def _watch_claims(
        self, claims: list[Body], pods: list[Any], pending: bool, now: float, violation: Violation, *, static: set[str]
    ) -> None:
        used_nodes = {Pod(p).node_name for p in pods if Pod(p).node_name and not _daemon(p)}
        self._alive = {str(Pod(p).uid) for p in pods}
        self._ever_bound.update(str(Pod(p).uid) for p in pods if Pod(p).node_name)
        seen = set()
        for claim in claims:
            seen.add(claim.name)
            # a static pool's NodeClaims are launched for its replicas, not for the pods pending meanwhile
            wanted = pending and claim.labels.get(wk.LABEL_NODEPOOL) not in static
            known = self._claims.setdefault(claim.name, _Claim(now, wanted))
            known.nominated.update(nominated_in(claim.annotations))
            if known.initialized is None and claim.condition_is(INITIALIZED):
                known.initialized = now
            if str(claim.status.get("nodeName") or "") in used_nodes:
                known.used = True
            if known.deleted is None and claim.deleting:
                known.deleted = now
            self._judge_unused(claim.name, known, now, violation)
        for name, known in self._claims.items():
            if name not in seen and known.deleted is None:
                known.deleted = now
                self._judge_unused(name, known, now, violation, gone=True)

    def _judge_unused(self, name: str, claim: _Claim, now: float, violation: Violation, *, gone: bool = False) -> None:
        if not claim.wanted or claim.used or claim.cut or claim.initialized is None or self._withdrawn(claim):
            return
        if now - claim.initialized > UNUSED_SECONDS or gone or claim.deleted is not None:
            violation("launched_unused", name, f"initialized {now - claim.initialized:.0f}s ago, no pod ever bound")

    def _withdrawn(self, claim: _Claim) -> bool:
        """Every pod it was launched for is gone without having run anywhere: nobody's bad decision."""
        return bool(claim.nominated) and not claim.nominated & (self._alive | self._ever_bound)

    def _watch_evictions(
        self, pods: list[Any], node_claims: Mapping[str, Body], now: float, violation: Violation
    ) -> None:
        current = {}
        for raw in pods:
            pod = Pod(raw)
            if pod.node_name and not _daemon(raw):
                owners = [o for o in pod.owner_references if o.get("controller")]
                current[str(pod.uid)] = (pod.node_name, str(owners[0].get("uid")) if owners else "")
        for node, claim in node_claims.items():  # remembered: a drain may remove the NodeClaim between samples
            seen = self._reason(claim)
            if seen is not None:
                self._node_reasons.setdefault(node, seen)
        for uid, (node, owner) in self._pods.items():
            if uid in current:
                continue
            reason = self._reason(node_claims.get(node)) or self._node_reasons.get(node)
            if reason is None:
                continue  # scaled down, or its node's instance went without a NodeClaim deletion
            self._evictions[reason] += 1
            if reason in DISRUPTION:
                if not owner:
                    violation("displaced_pod_unplaced", uid, f"evicted from {node} ({reason}) with no controller")
                self._displaced.append(_Displaced(owner, now, after=self._sampled))
        self._pods = current

    def _reason(self, claim: Body | None) -> str | None:
        if claim is None:
            return None
        mark = claim.condition(DISRUPTION_REASON)
        if mark and mark.get("status") == "True":
            return str(mark.get("reason"))
        instance = str(claim.status.get("providerID") or "").rsplit("/", 1)[-1]
        if instance in self.sim.actors.interrupted:
            return "Interrupted"
        if claim.deleting:
            return "Deleted"
        return None

    def _watch_successors(
        self, pending: list[Any], now: float, violation: Violation, excused: Mapping[str, float]
    ) -> None:
        waiting = {str(Pod(p).uid): p for p in pending}
        self._pending_since = {uid: self._pending_since.get(uid, now) for uid in waiting}
        for displaced in self._displaced:
            if not displaced.owner:
                continue
            if displaced.successor is None:
                for uid, raw in waiting.items():
                    owners = {str(o.get("uid")) for o in Pod(raw).owner_references}
                    new = self._pending_since[uid] > displaced.after
                    if new and uid not in self._taken and displaced.owner in owners:
                        displaced.successor, displaced.since = uid, now
                        self._taken.add(uid)
                        break
                continue
            if displaced.successor in waiting and displaced.since is not None:
                # a successor waiting on EC2's refusals waits on EC2, as any pending pod does
                waited = min(now - displaced.since, excused.get(displaced.successor, now))
                self._pending_max = max(self._pending_max, waited)
                if waited > UNPLACED_SECONDS:
                    violation("displaced_pod_unplaced", displaced.successor, f"pending {waited:.0f}s after eviction")

    def _watch_marks(self, claims: list[Body], violation: Violation) -> None:
        pools = self._nodepools()
        for claim in claims:
            mark = claim.condition(DISRUPTION_REASON)
            if claim.name in self._marked or not mark or mark.get("status") != "True":
                continue
            self._marked.add(claim.name)
            pool = pools.get(claim.labels.get(wk.LABEL_NODEPOOL, ""))
            initialized = parse_time((claim.condition(INITIALIZED) or {}).get("lastTransitionTime"))
            marked = parse_time(mark.get("lastTransitionTime"))
            if mark.get("reason") not in CONSOLIDATION or pool is None or initialized is None or marked is None:
                continue
            after = parse_nillable(pool.spec.disruption.consolidate_after)
            if after is not None and marked - initialized < after:
                violation(
                    "replaced_too_soon", claim.name, f"marked {(marked - initialized).total_seconds():.0f}s after init"
                )

    def _watch_ledger(self, violation: Violation) -> None:
        for pool in self._nodepools().values():
            for entry in read_ledger(pool):
                key = (pool.name, entry.started.isoformat(), ",".join(entry.nodes))
                if key in self._ledger:
                    continue
                self._ledger[key] = entry
                if entry.reason in CONSOLIDATION and entry.realized is not None and entry.realized <= 0:
                    violation("consolidation_without_saving", ", ".join(entry.nodes), f"realized ${entry.realized}/h")

    def _nodepools(self) -> dict[str, NodePool]:
        pools = {}
        for raw in self.sim.kube.list(wk.API_VERSION, "NodePool"):
            try:
                pool = NodePool.model_validate(raw)
            except ValueError:
                continue
            pools[pool.name] = pool
        return pools

    # --- at the end ------------------------------------------------------------------------------
    def figures(self) -> dict[str, Any]:
        hours = max(self.sim.clock.elapsed, 1.0) / 3600
        lifetimes = sorted(
            c.deleted - c.initialized
            for c in self._claims.values()
            if c.deleted is not None and c.initialized is not None
        )
        entries = list(self._ledger.values())
        return {
            "evictions_per_hour": {r: round(n / hours, 2) for r, n in sorted(self._evictions.items())},
            "node_lifetime_median_s": round(statistics.median(lifetimes)) if lifetimes else None,
            "node_lifetime_p10_s": round(lifetimes[len(lifetimes) // 10]) if lifetimes else None,
            "launches_per_hour": round(len(self._claims) / hours, 2),
            "ledger_commands": len(entries),
            "savings_predicted": round(sum(e.predicted or 0.0 for e in entries), 4),
            "savings_realized": round(sum(e.realized or 0.0 for e in entries), 4),
            "displaced_pending_max_s": round(self._pending_max),
        }


def _daemon(pod: Mapping[str, Any]) -> bool:
    return any(o.get("kind") == "DaemonSet" for o in Pod(pod).owner_references)
