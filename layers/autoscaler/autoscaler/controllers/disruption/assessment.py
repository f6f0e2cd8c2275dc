"""What a disruption pass sees and decides, before it writes anything: the assessment. Pure.

From one read of the cluster: each NodeClaim's wanted conditions (drift, consolidatable, pod events), the
NodeClaims past ``expireAfter``, the candidates, the budgets and the methods' decision. ``autoscaler plan
--disruption`` prints it; the controller carries it out.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.conditions import is_true
from autoscaler.apis.v1.nodeclaim import LAUNCHED, NodeClaim, NodeClaimStatus
from autoscaler.apis.v1.nodepool import NodePool
from autoscaler.cloudprovider.errors import CloudProviderError
from autoscaler.cloudprovider.port import UnavailableOfferings
from autoscaler.cloudprovider.repair import RepairPolicy
from autoscaler.cloudprovider.types import Drift, InstanceType
from autoscaler.controllers.disruption.balanced import PoolTotals, pool_totals
from autoscaler.controllers.disruption.candidates import Candidates, find_candidates
from autoscaler.controllers.disruption.conditions import (
    DRIFTED,
    ClaimStatus,
    expires_at,
    static_drift,
    wanted_status,
)
from autoscaler.controllers.disruption.methods import Decisions, Methods
from autoscaler.controllers.disruption.pdb import DisruptionBudgets
from autoscaler.controllers.disruption.repair import Repairs
from autoscaler.controllers.disruption.repair import decide as decide_repairs
from autoscaler.controllers.disruption.rescheduling import Rescheduler
from autoscaler.controllers.disruption.verification import PlacementCheck, check_placements
from autoscaler.controllers.orchestration.budgets import DRIFTED as DRIFTED_REASON
from autoscaler.controllers.orchestration.budgets import EMPTY, UNDERUTILIZED, Budgets, counts
from autoscaler.controllers.provisioning.controller import ProvisioningCloud, usable_nodepools
from autoscaler.controllers.state import ClusterState
from autoscaler.controllers.state.nodes import nodes_by_provider_id
from autoscaler.controllers.state.pods import pods_by_node
from autoscaler.controllers.static import Counts, is_static, node_counts
from autoscaler.controllers.zonalshift import ZonalShiftCloud
from autoscaler.kube.objects import Node

log = logging.getLogger(__name__)
KubeObject = Mapping[str, Any]


class DisruptionCloud(ProvisioningCloud, ZonalShiftCloud, Protocol):
    def drift_many(self, claims: Sequence[NodeClaim]) -> list[Drift | CloudProviderError | None]:
        """Answer i: why claim i's instance no longer matches its EC2NodeClass, None, or the error that kept the
        provider from telling (the NodeClaim's Drifted condition is then left as it is)."""
        ...


@dataclass
class Assessment:
    state: ClusterState
    nodepools: dict[str, NodePool]
    statuses: dict[str, ClaimStatus] = field(default_factory=dict)  # NodeClaim -> wanted, where it changes
    drift_errors: dict[str, str] = field(default_factory=dict)  # NodeClaim -> why its drift is unknown now
    expired: list[NodeClaim] = field(default_factory=list)
    repairs: Repairs = field(default_factory=Repairs)  # node repair (NodeRepair gate): due, blocked, waiting
    claims: list[NodeClaim] = field(default_factory=list)  # as they will be (wanted conditions applied)
    candidates: Candidates = field(default_factory=Candidates)
    decisions: Decisions = field(default_factory=Decisions)
    skipped_nodepools: dict[str, str] = field(default_factory=dict)
    instance_types: dict[str, list[InstanceType]] = field(default_factory=dict)  # of the usable NodePools
    budgets: Budgets | None = None
    totals: dict[str, PoolTotals] = field(default_factory=dict)  # per NodePool: what Balanced scores against
    static: dict[str, Counts] = field(default_factory=dict)  # per static NodePool: its NodeClaims by state
    _nodes: dict[str, KubeObject] | None = field(default=None, repr=False)

    def node_of(self, claim: NodeClaim) -> KubeObject | None:
        if self._nodes is None:
            self._nodes = nodes_by_provider_id(self.state.nodes)
        return self._nodes.get((claim.status.provider_id if claim.status else None) or "")


def applied(claim: NodeClaim, wanted: ClaimStatus) -> NodeClaim:
    status = (claim.status or NodeClaimStatus()).model_copy(
        update={"conditions": wanted.conditions, "last_pod_event_time": wanted.last_pod_event_time}
    )
    return claim.model_copy(update={"status": status})


class Assessor:
    def __init__(
        self,
        cloud: DisruptionCloud,
        unavailable: UnavailableOfferings,
        *,
        spot_to_spot: bool = False,
        timer: Callable[[], float] = time.perf_counter,
        checks: Sequence[PlacementCheck] = (check_placements,),
        repair_policies: Sequence[RepairPolicy] = (),
    ) -> None:
        self._cloud, self._unavailable, self._spot_to_spot, self._timer = cloud, unavailable, spot_to_spot, timer
        self._checks, self._repair_policies = tuple(checks), tuple(repair_policies)

    def assess(
        self,
        state: ClusterState,
        pdbs: Sequence[KubeObject],
        now: datetime,
        time_left: Callable[[], float] = lambda: math.inf,
    ) -> Assessment:
        pools = {p.name: p for p in state.nodepools if not p.metadata.deletion_timestamp}
        found = Assessment(state, pools)
        drifts = self._drift(state.nodeclaims, pools, found)
        pods_on = pods_by_node(state.bound_pods)
        for claim in state.nodeclaims:
            pool = pools.get((claim.metadata.labels or {}).get(wk.LABEL_NODEPOOL, ""))
            if claim.metadata.deletion_timestamp or pool is None:
                found.claims.append(claim)
                continue
            node = found.node_of(claim)
            pods = pods_on.get(Node(node).name, []) if node is not None else None
            wanted = wanted_status(claim, pool, drifts.get(claim.name), pods, now)
            if claim.name in found.drift_errors:  # unknown now: keep what the condition said
                kept = [c for c in (claim.status.conditions or []) if c.type == DRIFTED] if claim.status else []
                wanted = ClaimStatus(
                    [*(c for c in wanted.conditions if c.type != DRIFTED), *kept],
                    wanted.last_pod_event_time,
                    wanted.digest,
                )
            if any(wanted.differs(claim)):
                found.statuses[claim.name] = wanted
            current = applied(claim, wanted)
            expiry = expires_at(claim, pool)
            if expiry is not None and expiry <= now:
                found.expired.append(current)
            found.claims.append(current)
        expired = {c.name for c in found.expired}
        live = [c for c in found.claims if c.name not in expired]
        found.repairs = decide_repairs(live, state.nodes, self._repair_policies, now)
        repaired = [r.claim for r in found.repairs.due]
        live = [c for c in live if c.name not in {r.name for r in repaired}]
        usable, types = usable_nodepools(state, self._cloud, now, found.skipped_nodepools)
        found.instance_types = types
        found.candidates = find_candidates(
            live, state.nodes, pods_on, pools, types, DisruptionBudgets(pdbs, state.bound_pods), now
        )
        total, disrupting = counts(found.claims, state.nodes)
        for claim in [*found.expired, *repaired]:  # going now: they count against the budgets
            pool_name = (claim.metadata.labels or {}).get(wk.LABEL_NODEPOOL, "")
            disrupting[pool_name] = disrupting.get(pool_name, 0) + 1
        found.budgets = Budgets(list(pools.values()), total, disrupting, now)
        rescheduler = Rescheduler(state, usable, types, self._unavailable.unavailable(), now, checks=self._checks)
        for candidate in found.candidates.candidates:
            candidate.buffer_pods = rescheduler.buffer_hosts.get(candidate.node_name, ())
        found.totals = pool_totals(live, state.nodes, pods_on, types)
        found.static = {name: node_counts(pool, found.claims) for name, pool in pools.items() if is_static(pool)}
        methods = Methods(
            rescheduler,
            found.budgets,
            spot_to_spot=self._spot_to_spot,
            timer=self._timer,
            totals=found.totals,
            static_counts=found.static,
        )
        found.decisions = methods.decide(found.candidates.candidates, time_left)
        for name in pools:
            for reason in (DRIFTED_REASON, EMPTY, UNDERUTILIZED):
                found.budgets.verdict(name, reason)
        found.decisions.budgets = dict(found.budgets.verdicts)
        return found

    def _drift(
        self, claims: Sequence[NodeClaim], pools: Mapping[str, NodePool], found: Assessment
    ) -> dict[str, Drift | None]:
        """Static drift from the NodePool first; the provider's checks (one batch) for the rest."""
        drifts: dict[str, Drift | None] = {}
        ask: list[NodeClaim] = []
        for claim in claims:
            pool = pools.get((claim.metadata.labels or {}).get(wk.LABEL_NODEPOOL, ""))
            launched = is_true(claim.status.conditions if claim.status else None, LAUNCHED)
            if pool is None or claim.metadata.deletion_timestamp or not launched:
                continue
            drifts[claim.name] = static_drift(claim, pool)
            if drifts[claim.name] is None:
                ask.append(claim)
        if not ask:
            return drifts
        try:
            answers = self._cloud.drift_many(ask)
        except CloudProviderError as error:
            answers = [error] * len(ask)
        for claim, answer in zip(ask, answers, strict=True):
            if isinstance(answer, CloudProviderError):
                found.drift_errors[claim.name] = str(answer)
                log.info("drift of %s is unknown now: %s", claim.name, answer)
            else:
                drifts[claim.name] = answer
        return drifts
