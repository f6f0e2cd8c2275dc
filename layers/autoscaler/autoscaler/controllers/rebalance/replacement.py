"""Proactive replacement on rebalance recommendations: the provisioner's step (docs/interruption.md).

The interruption function only records the recommendation on the NodeClaim (``recommendation``). Each
provisioner pass, after the pending pods, this step produces commands for the replacement orchestrator
(``controllers.orchestration``, under the rebalance policy) and lets it advance the ones in flight:

1. advance: a command whose replacements are all initialized drains its old node once the NodePool's
   reason-less budgets and ``karpenter.sh/do-not-disrupt`` allow it (cordon, then delete the NodeClaim: the
   termination function drains it); a replacement gone or not initialized in time gives the command up,
   which leaves the record ``Failed`` and the node to the interruption warning;
2. start: every NodeClaim that awaits a replacement (recommended, in no command, its NodePool still says
   ``Replace``, initialized with a Node that is not being deleted) gets what one scheduling simulation without
   those nodes and without their spot offerings needs; a node one of whose pods fits nowhere is given up at once.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from autoscaler import metrics as m
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.cloudprovider.errors import OfferingKey
from autoscaler.cloudprovider.port import UnavailableOfferings
from autoscaler.controllers.orchestration import (
    REBALANCE_POLICY,
    Command,
    Orchestrator,
    Outcome,
    Replacement,
    Target,
    in_command,
)
from autoscaler.controllers.orchestration.legacy import has_old_record
from autoscaler.controllers.orchestration.record import RecordError, read_record, replaces
from autoscaler.controllers.provisioning.controller import CREATE_RESERVE_SECONDS, ProvisioningCloud, usable_nodepools
from autoscaler.controllers.provisioning.nodeclaims import to_nodeclaim
from autoscaler.controllers.rebalance.recommendation import RebalancePolicy, rebalance_policy, rebalance_recommended_at
from autoscaler.controllers.state import ClusterState, in_flight
from autoscaler.controllers.state.nodes import node_of, nodes_by_provider_id
from autoscaler.controllers.state.pods import needs_a_new_place, opts_out, pod_ref
from autoscaler.kube.objects import Node, Pod
from autoscaler.kube.port import Cluster, KubeObject
from autoscaler.metrics import MetricPoint
from autoscaler.scheduling import PodRef, Scheduler

log = logging.getLogger(__name__)
REASON = REBALANCE_POLICY.reason  # in the record and events; no budget names it, so reason-less ones apply
METRIC_REASON = "rebalance_recommendation"  # Karpenter's interruption message kind, as a metric reason


@dataclass
class RebalanceResult:
    """What this pass did: the orchestrator's outcome, and the labels the metrics need."""

    outcome: Outcome = field(default_factory=Outcome)
    nodepool_of: dict[str, str] = field(default_factory=dict)
    capacity_type_of: dict[str, str] = field(default_factory=dict)

    def points(self) -> list[MetricPoint]:
        """Karpenter's created and disrupted counters, with the interruption message kind as the reason."""
        out = []
        for metric, names in (
            (m.NODECLAIMS_CREATED, self.outcome.created_names),
            (m.NODECLAIMS_DISRUPTED, list(self.outcome.deleted)),
        ):
            counted = Counter((self.capacity_type_of.get(n, ""), self.nodepool_of.get(n, "")) for n in names)
            out += [
                MetricPoint(
                    metric, count, dimensions=(("capacity_type", ct), ("nodepool", pool), ("reason", METRIC_REASON))
                )
                for (ct, pool), count in sorted(counted.items())
            ]
        return out

    def summary(self) -> dict[str, Any]:
        return {
            "replacements_created": self.outcome.created_names,
            "adopted": self.outcome.adopted,
            "drained": list(self.outcome.deleted),
            "waiting": len(self.outcome.waiting),
            "gave_up": self.outcome.abandoned,
        }

    def label(self, claims: Sequence[NodeClaim]) -> None:
        for claim in claims:
            labels = claim.metadata.labels or {}
            self.nodepool_of[claim.name] = labels.get(wk.LABEL_NODEPOOL, "")
            self.capacity_type_of[claim.name] = labels.get(wk.LABEL_CAPACITY_TYPE, "")


def awaits_replacement(claim: NodeClaim) -> bool:
    """Recommended, with no record (a ``Failed`` one included: it is not tried twice; an old one not read yet
    included), in no command, not being deleted."""
    try:
        record = read_record(claim)
    except RecordError:
        return False
    return (
        rebalance_recommended_at(claim) is not None
        and record is None
        and not in_command(claim)
        and not has_old_record(claim)
        and claim.metadata.deletion_timestamp is None
    )


def _in_protocol(claim: NodeClaim) -> bool:
    return rebalance_recommended_at(claim) is not None


class RebalanceReplacement:
    def __init__(
        self,
        cluster: Cluster,
        cloud: ProvisioningCloud,
        unavailable: UnavailableOfferings,
        clock: Callable[[], datetime],
    ) -> None:
        self._cloud, self._unavailable, self._clock = cloud, unavailable, clock
        self.orchestrator = Orchestrator(cluster, clock, [REBALANCE_POLICY])

    def reconcile(
        self,
        state: ClusterState,
        created: Sequence[NodeClaim] = (),
        time_left: Callable[[], float] = lambda: math.inf,
    ) -> RebalanceResult:
        """One step for every NodeClaim in the protocol; ``created`` are this pass's new NodeClaims."""
        result = RebalanceResult()
        claims = [*state.nodeclaims, *created]
        if not any(_in_protocol(c) for c in claims):
            return result  # the common case: nothing read, nothing asked of the cloud
        result.label(claims)
        claims = self.orchestrator.advance(
            claims, state.nodes, result.outcome, pods=state.bound_pods, nodepools=state.nodepools
        )
        pools = {p.name: p for p in state.nodepools}
        by_provider = nodes_by_provider_id(state.nodes)
        node_of_claim = {c.name: n for c in claims if (n := node_of(c, by_provider)) is not None}
        stood_in = {n for c in claims if not c.metadata.deletion_timestamp for n in replaces(c)}
        starting = [
            c
            for c in claims
            if awaits_replacement(c)
            and c.name not in stood_in  # replacements it has already: a release or an upgrade is pending
            and rebalance_policy(pools.get((c.metadata.labels or {}).get(wk.LABEL_NODEPOOL, "")))[0]
            is RebalancePolicy.REPLACE
            and c.initialized
            and c.name in node_of_claim
            and not Node(node_of_claim[c.name]).deleting
        ]
        if not starting:
            return result
        if time_left() < CREATE_RESERVE_SECONDS:
            result.outcome.waiting.update(dict.fromkeys((c.name for c in starting), "time ran short"))
            return result
        targets = [Target(c, node_of_claim[c.name]) for c in starting]
        self._start(targets, replace(state, nodeclaims=claims), result)
        result.label(result.outcome.created)
        return result

    def _start(self, targets: Sequence[Target], state: ClusterState, result: RebalanceResult) -> None:
        """One simulation for all of them, so that two nodes' pods never count on the same spare room."""
        nodepools, types = usable_nodepools(state, self._cloud, self._clock(), {})
        risky = {
            OfferingKey(labels[wk.LABEL_INSTANCE_TYPE], labels[wk.LABEL_ZONE], wk.CAPACITY_TYPE_SPOT)
            for labels in (t.claim.metadata.labels or {} for t in targets)
            if labels.get(wk.LABEL_CAPACITY_TYPE) == wk.CAPACITY_TYPE_SPOT
            and wk.LABEL_INSTANCE_TYPE in labels
            and wk.LABEL_ZONE in labels
        }
        names = {Node(t.node).name: t.name for t in targets}
        pods: list[KubeObject] = []
        owner: dict[PodRef, str] = {}
        for pod in state.bound_pods:
            view = Pod(pod)
            candidate = names.get(view.node_name)
            if candidate is not None and needs_a_new_place(view):
                pods.append(pod)
                owner[pod_ref(view)] = candidate
        pending = [p for p in state.pending_pods if not opts_out(p)]
        flight = in_flight(state.nodeclaims, state.nodes, pending, types, now=self._clock())
        snapshot = state.snapshot(nodepools, types, flight, self._unavailable.unavailable() | risky)
        solved = Scheduler(snapshot).solve([*pods, *flight.pending], excluded_nodes={*names, *names.values()})
        failed: dict[str, str] = {}
        for ref, error in solved.unschedulable.items():
            if ref in owner:
                failed.setdefault(owner[ref], f"pod {ref.namespace}/{ref.name} fits nowhere else: {error.message}")
        for target in targets:
            if target.name in failed:
                self.orchestrator.give_up([target], REBALANCE_POLICY, failed[target.name], result.outcome)
        pools = {p.name: p for p in nodepools}
        replacements = []
        for new in solved.new_nodeclaims:
            served = tuple(sorted({owner[r] for r in new.pods if r in owner} - failed.keys()))
            if not served:
                continue  # only pending pods, or only pods of nodes given up: the provisioning step's business
            pool = pools[new.nodepool]
            claim = to_nodeclaim(new, pool, state.nodeclass(pool.spec.template.spec.node_class_ref.name))
            replacements.append(Replacement(claim, served))
        going = [t for t in targets if t.name not in failed]
        if going:
            log.info("rebalance recommended for %s", ", ".join(t.name for t in going))
            self.orchestrator.start(Command(REASON, going, replacements), result.outcome)
