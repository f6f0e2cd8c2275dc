"""The provisioning controller (Karpenter's provisioner): pending pods in, NodeClaims out.

From one read of the cluster (:class:`ClusterState`), the Ready NodePools' instance types and the offerings
currently unavailable, run the scheduler over the pending pods (and the pods of nodes being deleted), then
create a NodeClaim for each new node it decided on, send ``Nominated`` events for pods that will run on new,
in-flight or existing capacity, and ``FailedScheduling`` events with the scheduler's reason for pods no
NodePool can run. ``plan`` does everything but the writes, for ``autoscaler plan``.

NodePool limits hold across passes because each pass counts every NodeClaim already in the cluster, those
not launched yet at the largest capacity they may launch with (``inflight``); passes do not overlap (the
provisioning queue is FIFO with one message group, and a pass holds the provisioner lease).
"""

from __future__ import annotations

import logging
import math
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from autoscaler import metrics as m
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.apis.v1.nodepool import NodePool
from autoscaler.clock import utc_now
from autoscaler.cloudprovider.errors import CloudProviderError
from autoscaler.cloudprovider.port import UnavailableOfferings
from autoscaler.cloudprovider.types import InstanceType
from autoscaler.controllers.buffers import buffer_of
from autoscaler.controllers.concurrency import each
from autoscaler.controllers.nodepool import not_ready_reason
from autoscaler.controllers.provisioning import events
from autoscaler.controllers.provisioning.nodeclaims import to_nodeclaim
from autoscaler.controllers.provisioning.plan import Plan, PlannedNodeClaim
from autoscaler.controllers.state import ClusterState, in_flight
from autoscaler.controllers.state.pods import opts_out, pod_ref
from autoscaler.kube.objects import Pod
from autoscaler.kube.port import Cluster, ClusterError, KubeObject
from autoscaler.metrics import MetricPoint
from autoscaler.scheduling import Placement, PodRef, Scheduler

log = logging.getLogger(__name__)
CREATE_RESERVE_SECONDS = 25.0  # stop creating NodeClaims when less is left: their launches need the time
CREATE_CHUNK = 64  # NodeClaims created (a few at a time) between two looks at the clock


class ProvisioningCloud(Protocol):
    def instance_types(self, nodepool: NodePool) -> list[InstanceType]:
        """The NodePool's instance types with capacity, overhead and offerings. Raises CloudProviderError
        (NodeClassNotReadyError, TransientCloudError, ...) when they cannot be known now."""
        ...


def usable_nodepools(
    state: ClusterState, cloud: ProvisioningCloud, now: datetime, skipped: dict[str, str]
) -> tuple[list[NodePool], dict[str, list[InstanceType]]]:
    """The NodePools that can launch now (Ready, not being deleted, with instance types) and their instance types
    (with ``state.overlays`` applied); each other NodePool in ``skipped`` with the reason."""
    classes = {c.name: c for c in state.nodeclasses}
    pools, types = [], {}
    for nodepool in state.nodepools:
        if nodepool.metadata.deletion_timestamp:
            skipped[nodepool.name] = "is being deleted"
            continue
        if (reason := not_ready_reason(nodepool, classes, now)) is not None:
            skipped[nodepool.name] = f"is not ready ({reason})"
            continue
        if nodepool.spec.replicas is not None:  # static: the static reconciler keeps its node count
            skipped[nodepool.name] = "is static (spec.replicas): it does not launch nodes for pending pods"
            continue
        try:
            offered = cloud.instance_types(nodepool)
        except CloudProviderError as error:
            skipped[nodepool.name] = f"has no instance types now ({error})"
            continue
        if not offered:
            skipped[nodepool.name] = "has no instance types its EC2NodeClass can launch"
            continue
        pools.append(nodepool)
        types[nodepool.name] = state.overlays.apply(nodepool.name, offered) if state.overlays else offered
    return pools, types


@dataclass
class ProvisioningResult:
    plan: Plan
    created: list[NodeClaim] = field(default_factory=list)  # as stored: names and UIDs assigned
    created_for_pools: list[str] = field(default_factory=list)  # the NodePool of each created NodeClaim
    failed: list[str] = field(default_factory=list)  # creations that failed (the next pass plans again)
    deferred: int = 0  # NodeClaims left for the next pass: time ran short
    points: list[MetricPoint] = field(default_factory=list)  # the metrics of the pass, for the handler


class ProvisioningController:
    def __init__(
        self,
        cluster: Cluster,
        cloud: ProvisioningCloud,
        unavailable: UnavailableOfferings,
        *,
        clock: Callable[[], datetime] = utc_now,
        throttle: events.EventThrottle | None = None,
        timer: Callable[[], float] = time.perf_counter,
    ) -> None:
        self._cluster, self._cloud, self._unavailable = cluster, cloud, unavailable
        self._clock, self._timer = clock, timer
        self._throttle = throttle or events.EventThrottle()

    # --- deciding ------------------------------------------------------------------------------------
    def plan(self, state: ClusterState, extra_pods: Sequence[KubeObject] = ()) -> Plan:
        """What this pass would do: read-only."""
        plan = Plan()
        pods = self._pods(state, extra_pods, plan)
        if not pods:
            return plan
        now = self._clock()
        pools, types = usable_nodepools(state, self._cloud, now, plan.skipped_nodepools)
        log.info(
            "%d pods to place; %d NodePools can launch, %d cannot",
            len(pods),
            len(pools),
            len(plan.skipped_nodepools),
            extra={
                "decision": "nodepools",
                "offered": {p.name: len(types[p.name]) for p in pools},
                "skipped": dict(plan.skipped_nodepools),
            },
        )
        flight = in_flight(state.nodeclaims, state.nodes, pods, types, now=now)
        plan.held = {pod_ref(view): view.node_name for view in map(Pod, flight.held)}
        snapshot = state.snapshot(pools, types, flight, self._unavailable.unavailable())
        started = self._timer()
        result = Scheduler(snapshot).solve(flight.pending)
        plan.scheduling_seconds = self._timer() - started
        plan.pods, plan.skipped_inputs = len(pods), result.skipped
        # A stand-in node is the NodeClaim it stands for.
        stand_in = flight.stand_ins
        plan.placements = {
            pod: Placement("nodeclaim", where.name) if where.kind == "node" and where.name in stand_in else where
            for pod, where in result.placements.items()
        }
        for skipped in result.skipped:
            log.warning("scheduling skipped an unreadable input: %s", skipped)
        pools_by_name = {p.name: p for p in pools}
        for decision in result.new_nodeclaims:
            nodepool = pools_by_name[decision.nodepool]
            nodeclass = state.nodeclass(nodepool.spec.template.spec.node_class_ref.name)
            plan.nodeclaims.append(PlannedNodeClaim(to_nodeclaim(decision, nodepool, nodeclass), decision))
        not_taking_part = "; ".join(f"nodepool {n!r} {why}" for n, why in sorted(plan.skipped_nodepools.items()))
        plan.virtual = {pod_ref(p): key for p in state.buffer_pods if (key := buffer_of(p)) is not None}
        for pod, error in result.unschedulable.items():
            why = f"{error.message}; {not_taking_part}" if not_taking_part else error.message
            (plan.buffer_unschedulable if pod in plan.virtual else plan.unschedulable)[pod] = why
        return plan

    def _pods(self, state: ClusterState, extra: Sequence[KubeObject], plan: Plan) -> list[KubeObject]:
        """Pending pods, pods of nodes being deleted, any given pods and the buffers' virtual pods; each once,
        opted-out ones set aside."""
        chosen: dict[PodRef, KubeObject] = {}
        for pod in [*state.pending_pods, *state.reschedulable_pods(), *extra, *state.buffer_pods]:
            ref = pod_ref(pod)
            if opts_out(pod):
                plan.ignored_pods.append(ref)
            else:
                chosen.setdefault(ref, pod)
        return list(chosen.values())

    # --- acting --------------------------------------------------------------------------------------
    def provision(self, state: ClusterState, time_left: Callable[[], float] = lambda: math.inf) -> ProvisioningResult:
        plan = self.plan(state)
        result = ProvisioningResult(plan)
        result.points.append(MetricPoint(m.SCHEDULER_QUEUE_DEPTH, plan.pods))
        if plan.pods:
            scheduled = MetricPoint(
                m.SCHEDULING_DURATION, plan.scheduling_seconds, "Seconds", (("controller", "provisioner"),)
            )
            result.points.append(scheduled)
        created_for: dict[PodRef, str] = {}
        for start in range(0, len(plan.nodeclaims), CREATE_CHUNK):
            if time_left() < CREATE_RESERVE_SECONDS:
                result.deferred = len(plan.nodeclaims) - start
                log.warning("deferring %d NodeClaims to the next pass: time is running out", result.deferred)
                break
            chunk = plan.nodeclaims[start : start + CREATE_CHUNK]
            outcomes = each(self._cluster.create_nodeclaim, [planned.nodeclaim for planned in chunk])
            for planned, outcome in zip(chunk, outcomes, strict=True):
                if isinstance(outcome, ClusterError):
                    log.warning("creating a NodeClaim for nodepool %s failed: %s", planned.nodepool, outcome)
                    result.failed.append(f"{planned.nodepool}: {outcome}")
                elif isinstance(outcome, Exception):
                    raise outcome  # not a cluster error: a bug, not to be swallowed
                else:
                    self._created(planned, outcome, result)
                    created_for.update(dict.fromkeys(planned.pods, outcome.name))
        self._publish(plan, created_for)
        result.points.append(MetricPoint(m.SCHEDULER_UNSCHEDULABLE_PODS, len(plan.unschedulable)))
        created = Counter(
            (pool, (claim.metadata.labels or {}).get(wk.LABEL_CAPACITY_TYPE, ""))
            for pool, claim in zip(result.created_for_pools, result.created, strict=True)
        )
        result.points += [
            MetricPoint(
                m.NODECLAIMS_CREATED,
                count,
                dimensions=(("capacity_type", capacity_type), ("nodepool", pool), ("reason", "provisioned")),
            )
            for (pool, capacity_type), count in sorted(created.items())
        ]
        return result

    def _created(self, planned: PlannedNodeClaim, stored: NodeClaim, result: ProvisioningResult) -> None:
        result.created.append(stored)
        result.created_for_pools.append(planned.nodepool)
        log.info(
            "created nodeclaim %s (nodepool %s) for %d pods, instance types %s",
            stored.name,
            planned.nodepool,
            len(planned.pods),
            _shortlist(o.name for o in planned.decision.instance_types),
            extra={"decision": "provisioned", **planned.decision_fields(stored.name)},
        )

    def _publish(self, plan: Plan, created_for: Mapping[PodRef, str]) -> None:
        for pod, where in plan.placements.items():
            if pod in plan.virtual:
                continue  # a buffer's virtual pod: no such pod to tell
            if where.kind == "new":
                if pod not in created_for:
                    continue  # its NodeClaim was not created this pass
                event = events.nominated(pod, nodeclaim=created_for[pod])
            elif where.kind == "nodeclaim":
                event = events.nominated(pod, nodeclaim=where.name)
            else:
                event = events.nominated(pod, node=where.name)
            if not self._throttle.nomination():
                break
            self._cluster.record_event(event)
        if plan.unschedulable:
            log.warning(
                "%d pods cannot be scheduled, e.g. %s: %s",
                len(plan.unschedulable),
                *next(iter(plan.unschedulable.items())),
            )
        for pod, reason in plan.unschedulable.items():
            if self._throttle.failure(pod.uid):
                self._cluster.record_event(events.failed_scheduling(pod, reason))


def _shortlist(names: Iterable[str], shown: int = 5) -> str:
    listed = list(names)
    text = ", ".join(listed[:shown])
    return f"{text} and {len(listed) - shown} other(s)" if len(listed) > shown else text
