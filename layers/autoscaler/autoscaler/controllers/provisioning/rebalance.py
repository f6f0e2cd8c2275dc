"""Proactive replacement on rebalance recommendations: the provisioner's half (docs/interruption.md).

The interruption function only records the recommendation on the NodeClaim. Each provisioner pass, after the
pending pods, this module moves every opted-in NodeClaim one step along a protocol kept on the NodeClaims
themselves (``controllers.interruption.rebalance`` reads it), so that any pass, cut short anywhere, converges:

1. start: a NodeClaim that awaits a replacement, with an initialized Node, adopts the NodeClaims annotated as
   replacing it (left by a pass that died before step 1's record) or else gets what a scheduling simulation
   without it and without its spot offering needs (each created NodeClaim annotated with the NodeClaims it
   replaces), then records their names (empty when its pods fit on existing capacity);
2. drain: once every recorded replacement is initialized, and the NodePool's reason-less budgets and
   ``karpenter.sh/do-not-disrupt`` allow it, cordon the old Node and delete the old NodeClaim (the termination
   function drains it);
3. give up: a recorded replacement that is gone, being deleted, or not initialized within the registration
   TTL sets the record to ``Failed`` with a warning event; the node is left to the interruption warning.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from autoscaler import metrics as m
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.conditions import is_true
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.apis.v1.nodepool import NodePool
from autoscaler.cloudprovider.errors import OfferingKey
from autoscaler.cloudprovider.port import UnavailableOfferings
from autoscaler.controllers.concurrency import each
from autoscaler.controllers.interruption.rebalance import (
    ANNOTATION_REBALANCE_REPLACEMENT,
    ANNOTATION_REBALANCE_REPLACES,
    REPLACEMENT_FAILED,
    RebalancePolicy,
    awaits_replacement,
    rebalance_policy,
    replacement_failed,
    replacements,
    replaces,
)
from autoscaler.controllers.lifecycle import INITIALIZED, REGISTRATION_TTL
from autoscaler.controllers.provisioning.controller import (
    CREATE_RESERVE_SECONDS,
    ProvisioningCloud,
    opts_out,
    pod_ref,
    usable_nodepools,
)
from autoscaler.controllers.provisioning.inflight import in_flight
from autoscaler.controllers.provisioning.nodeclaims import to_nodeclaim
from autoscaler.controllers.provisioning.state import ClusterState
from autoscaler.controllers.termination.nodes import DISRUPTED_TAINT, node_is_deleting, node_name, nodes_by_provider_id
from autoscaler.kube.port import Cluster, ClusterError, Event, KubeObject, ObjectRef
from autoscaler.kube.resources import is_daemonset_pod, is_static_pod, is_terminal
from autoscaler.metrics import MetricPoint
from autoscaler.scheduling import PodRef, Scheduler

log = logging.getLogger(__name__)
REASON = "RebalanceRecommendation"  # the disruption reason in events; no budget names it, so reason-less ones apply
METRIC_REASON = "rebalance_recommendation"  # Karpenter's interruption message kind, as a metric reason
REPLACEMENT_TTL = REGISTRATION_TTL  # a replacement not initialized this long after its creation has failed
# disruption.candidates.REPLACES (not imported: the disruption package imports the provisioner): while the old
# NodeClaim exists, consolidation leaves its replacement alone although it looks empty.
DISRUPTION_REPLACES = "serverless-karpenter.io/replaces"


@dataclass
class RebalanceResult:
    """What this pass did (NodeClaim names; ``created`` as stored)."""

    created: list[NodeClaim] = field(default_factory=list)  # replacements launched this pass
    recorded: dict[str, list[str]] = field(default_factory=dict)  # old -> its replacements, as recorded
    adopted: list[str] = field(default_factory=list)  # replacements found from a pass that died
    drained: list[str] = field(default_factory=list)  # old NodeClaims deleted
    waiting: dict[str, str] = field(default_factory=dict)  # old -> what it waits for
    gave_up: dict[str, str] = field(default_factory=dict)  # old -> why (now annotated Failed)
    errors: dict[str, str] = field(default_factory=dict)  # writes that failed: the next pass retries
    nodepool_of: dict[str, str] = field(default_factory=dict)  # for the metrics
    capacity_type_of: dict[str, str] = field(default_factory=dict)

    def points(self) -> list[MetricPoint]:
        """Karpenter's created and disrupted counters, with the interruption message kind as the reason."""
        out = []
        for metric, names in (
            (m.NODECLAIMS_CREATED, [c.name for c in self.created]),
            (m.NODECLAIMS_DISRUPTED, self.drained),
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
            "replacements_created": [c.name for c in self.created],
            "adopted": self.adopted,
            "drained": self.drained,
            "waiting": len(self.waiting),
            "gave_up": self.gave_up,
        }


def _labels(claim: NodeClaim) -> dict[str, str]:
    return dict(claim.metadata.labels or {})


def _ref(claim: NodeClaim) -> ObjectRef:
    return ObjectRef("NodeClaim", claim.name, uid=claim.metadata.uid)


def _initialized(claim: NodeClaim) -> bool:
    return is_true(claim.status.conditions if claim.status else None, INITIALIZED)


def _movable(pod: KubeObject) -> bool:
    """A pod that needs a place elsewhere when its node goes (not a DaemonSet's, mirror, finished or leaving)."""
    deleting = (pod.get("metadata") or {}).get("deletionTimestamp")
    return not (deleting or is_daemonset_pod(pod) or is_static_pod(pod) or is_terminal(pod))


class RebalanceReplacement:
    def __init__(
        self,
        cluster: Cluster,
        cloud: ProvisioningCloud,
        unavailable: UnavailableOfferings,
        clock: Callable[[], datetime],
    ) -> None:
        self._cluster, self._cloud, self._unavailable, self._clock = cluster, cloud, unavailable, clock

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
        pools = {p.name: p for p in state.nodepools}
        node_of = _nodes_of(claims, state.nodes)
        for claim in claims:
            result.nodepool_of[claim.name] = _labels(claim).get(wk.LABEL_NODEPOOL, "")
            result.capacity_type_of[claim.name] = _labels(claim).get(wk.LABEL_CAPACITY_TYPE, "")
        self._advance(claims, node_of, pools, state, result)
        starting = [
            c
            for c in claims
            if awaits_replacement(c)
            and rebalance_policy(pools.get(_labels(c).get(wk.LABEL_NODEPOOL, "")))[0] is RebalancePolicy.REPLACE
            and _initialized(c)
            and c.name in node_of
            and not node_is_deleting(node_of[c.name])
        ]
        if not starting:
            return result
        if time_left() < CREATE_RESERVE_SECONDS:
            result.waiting.update(dict.fromkeys((c.name for c in starting), "time ran short"))
            return result
        adopted = {c.name: [r.name for r in claims if c.name in replaces(r)] for c in starting}
        for claim in starting:
            if adopted[claim.name]:
                result.adopted += adopted[claim.name]
                self._record(claim, adopted[claim.name], result)
        fresh = [c for c in starting if not adopted[c.name]]
        if fresh:
            self._start(fresh, node_of, replace(state, nodeclaims=claims), result)
        return result

    # --- starting ------------------------------------------------------------------------------------
    def _start(
        self, olds: Sequence[NodeClaim], node_of: Mapping[str, KubeObject], state: ClusterState, result: RebalanceResult
    ) -> None:
        """One simulation for all of them, so that two nodes' pods never count on the same spare room."""
        nodepools, types = usable_nodepools(state, self._cloud, self._clock(), {})
        risky = {
            OfferingKey(labels[wk.LABEL_INSTANCE_TYPE], labels[wk.LABEL_ZONE], wk.CAPACITY_TYPE_SPOT)
            for labels in map(_labels, olds)
            if labels.get(wk.LABEL_CAPACITY_TYPE) == wk.CAPACITY_TYPE_SPOT
            and wk.LABEL_INSTANCE_TYPE in labels
            and wk.LABEL_ZONE in labels
        }
        names = {node_name(node_of[c.name]): c.name for c in olds}
        pods = [p for p in state.bound_pods if (p.get("spec") or {}).get("nodeName") in names and _movable(p)]
        owner: dict[PodRef, str] = {pod_ref(p): names[str(p["spec"]["nodeName"])] for p in pods}
        pending = [p for p in state.pending_pods if not opts_out(p)]
        flight = in_flight(state.nodeclaims, state.nodes, pending, types)
        snapshot = state.snapshot(nodepools, types, flight, self._unavailable.unavailable() | risky)
        solved = Scheduler(snapshot).solve([*pods, *flight.pending], excluded_nodes={*names, *names.values()})
        failed: dict[str, str] = {}
        for ref, error in solved.unschedulable.items():
            if ref in owner:
                failed.setdefault(owner[ref], f"pod {ref.namespace}/{ref.name} fits nowhere else: {error.message}")
        by_name = {c.name: c for c in olds}
        for name, why in failed.items():
            self._give_up(by_name[name], why, [], result)
        pools = {p.name: p for p in nodepools}
        planned: list[tuple[NodeClaim, list[str]]] = []
        for new in solved.new_nodeclaims:
            served = sorted({owner[r] for r in new.pods if r in owner} - failed.keys())
            if not served:
                continue  # only pending pods, or only pods of nodes given up: the provisioning step's business
            pool = pools[new.nodepool]
            claim = to_nodeclaim(new, pool, state.nodeclass(pool.spec.template.spec.node_class_ref.name))
            annotations = {
                **(claim.metadata.annotations or {}),
                ANNOTATION_REBALANCE_REPLACES: ",".join(served),
                DISRUPTION_REPLACES: ",".join(served),
            }
            metadata = claim.metadata.model_copy(update={"annotations": annotations})
            planned.append((claim.model_copy(update={"metadata": metadata}), served))
        made: dict[str, list[str]] = {c.name: [] for c in olds if c.name not in failed}
        incomplete: set[str] = set()
        for (_, served), stored in zip(
            planned, each(self._cluster.create_nodeclaim, [c for c, _ in planned]), strict=True
        ):
            if isinstance(stored, ClusterError):
                incomplete.update(served)  # not recorded: the next pass adopts what was created and goes on
                result.errors.update(dict.fromkeys(served, f"creating a replacement: {stored}"))
                continue
            if isinstance(stored, Exception):
                raise stored
            result.created.append(stored)
            result.nodepool_of[stored.name] = _labels(stored).get(wk.LABEL_NODEPOOL, "")
            result.capacity_type_of[stored.name] = _labels(stored).get(wk.LABEL_CAPACITY_TYPE, "")
            for name in served:
                made[name].append(stored.name)
        for name, replacement_names in made.items():
            if name not in incomplete:
                self._record(by_name[name], replacement_names, result)

    def _record(self, old: NodeClaim, names: list[str], result: RebalanceResult) -> None:
        try:
            self._cluster.patch_metadata(_ref(old), annotations={ANNOTATION_REBALANCE_REPLACEMENT: ",".join(names)})
        except ClusterError as error:  # the replacements carry its name: the next pass adopts them
            result.errors[old.name] = f"recording replacements: {error}"
            return
        result.recorded[old.name] = names
        what = f"Launching NodeClaim {', '.join(names)}" if names else "Its pods fit on existing capacity"
        log.info("rebalance recommended for %s: %s", old.name, what)
        self._cluster.record_event(Event(_ref(old), "DisruptionLaunching", f"{what}: {REASON}"))

    # --- waiting, draining, giving up -------------------------------------------------------------------
    def _advance(
        self,
        claims: Sequence[NodeClaim],
        node_of: Mapping[str, KubeObject],
        pools: Mapping[str, NodePool],
        state: ClusterState,
        result: RebalanceResult,
    ) -> None:
        by_name = {c.name: c for c in claims}
        ready: list[NodeClaim] = []
        now = self._clock()
        for old in claims:
            names = replacements(old)
            if names is None or replacement_failed(old) or old.metadata.deletion_timestamp:
                continue
            problem, waiting = None, None
            for name in names:
                new = by_name.get(name)
                created = new.created_at if new is not None else None
                if new is None or new.metadata.deletion_timestamp:
                    problem = f"replacement {name} failed to launch or was deleted"
                    break
                if not _initialized(new):
                    if created is not None and now - created > REPLACEMENT_TTL:
                        problem = f"replacement {name} was not initialized within {REPLACEMENT_TTL}"
                        break
                    waiting = f"replacement {name} is not initialized yet"
            if problem is not None:
                self._give_up(old, problem, [by_name[n] for n in names if n in by_name], result)
            elif waiting is not None:
                result.waiting[old.name] = waiting
            else:
                ready.append(old)
        if ready:
            self._drain(ready, node_of, pools, state, result)

    def _drain(
        self,
        olds: Sequence[NodeClaim],
        node_of: Mapping[str, KubeObject],
        pools: Mapping[str, NodePool],
        state: ClusterState,
        result: RebalanceResult,
    ) -> None:
        # Imported here: the disruption package imports the provisioner, which imports this module.
        from autoscaler.controllers.disruption.budgets import allowed_disruptions
        from autoscaler.controllers.disruption.candidates import counts

        total, disrupting = counts(state.nodeclaims, state.nodes)
        allowed: dict[str, int] = {}
        pods_on: dict[str, list[KubeObject]] = {}
        for pod in state.bound_pods:
            pods_on.setdefault(str((pod.get("spec") or {}).get("nodeName") or ""), []).append(pod)
        for old in olds:
            pool_name = _labels(old).get(wk.LABEL_NODEPOOL, "")
            node = node_of.get(old.name)
            blocker = _do_not_disrupt(old, node, pods_on.get(node_name(node) if node else "", []))
            pool = pools.get(pool_name)
            if blocker is None and pool is not None:
                if pool_name not in allowed:
                    verdict = allowed_disruptions(
                        pool, REASON, total.get(pool_name, 0), disrupting.get(pool_name, 0), self._clock()
                    )
                    allowed[pool_name] = verdict.allowed
                if allowed[pool_name] <= 0:
                    blocker = f"the disruption budgets of NodePool {pool_name} allow no disruption now"
            if blocker is not None:
                result.waiting[old.name] = blocker
                continue
            try:
                if node is not None:
                    self._cluster.cordon(node, DISRUPTED_TAINT)
                self._cluster.record_event(Event(_ref(old), "DisruptionTerminating", f"Disrupting NodeClaim: {REASON}"))
                self._cluster.delete(_ref(old))
            except ClusterError as error:
                result.errors[old.name] = f"draining: {error}"
                continue
            allowed[pool_name] = allowed.get(pool_name, 1) - 1
            result.drained.append(old.name)
            log.info("rebalance: replacements of %s are initialized; deleting it", old.name)

    def _give_up(self, old: NodeClaim, why: str, survivors: Sequence[NodeClaim], result: RebalanceResult) -> None:
        try:
            self._cluster.patch_metadata(_ref(old), annotations={ANNOTATION_REBALANCE_REPLACEMENT: REPLACEMENT_FAILED})
        except ClusterError as error:
            result.errors[old.name] = f"recording the failure: {error}"
            return
        log.warning("rebalance: giving up replacing %s: %s", old.name, why)
        result.gave_up[old.name] = why
        self._cluster.record_event(
            Event(_ref(old), "RebalanceReplacementFailed", f"Not replacing the node proactively: {why}", "Warning")
        )
        for new in survivors:  # no longer a replacement: consolidation may take it like any other node
            if new.metadata.deletion_timestamp is None and old.name in replaces(new):
                try:
                    self._cluster.patch_metadata(_ref(new), annotations={DISRUPTION_REPLACES: None})
                except ClusterError as error:
                    result.errors[new.name] = f"releasing the replacement: {error}"


def _in_protocol(claim: NodeClaim) -> bool:
    return awaits_replacement(claim) or (replacements(claim) is not None and not replacement_failed(claim))


def _nodes_of(claims: Sequence[NodeClaim], nodes: Sequence[KubeObject]) -> dict[str, KubeObject]:
    by_provider = nodes_by_provider_id(nodes)
    found = {}
    for claim in claims:
        node = by_provider.get(claim.status.provider_id) if claim.status and claim.status.provider_id else None
        if node is not None:
            found[claim.name] = dict(node)
    return found


def _do_not_disrupt(claim: NodeClaim, node: KubeObject | None, pods: Sequence[KubeObject]) -> str | None:
    marked = [("nodeclaim", claim.metadata.annotations or {})]
    if node is not None:
        marked.append(("node", (node.get("metadata") or {}).get("annotations") or {}))
    for pod in pods:
        metadata = pod.get("metadata") or {}
        marked.append((f"pod {metadata.get('namespace')}/{metadata.get('name')}", metadata.get("annotations") or {}))
    for owner, marks in marked:
        if marks.get(wk.ANNOTATION_DO_NOT_DISRUPT) == "true":
            return f"the {owner} has {wk.ANNOTATION_DO_NOT_DISRUPT}"
    return None
