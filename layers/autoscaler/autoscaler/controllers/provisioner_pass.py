"""One reconcile pass of the provisioner function: everything the 1-minute sweep and every batch of
cluster events do, in this order, from one read of the cluster:

1. NodePool drift hashes (and the re-stamping of NodeClaims after a hash version change);
2. with the NodeOverlay gate, the overlays evaluated onto the pass's instance types and their status written;
3. static NodePools (StaticCapacity gate): create or remove NodeClaims so that each keeps ``spec.replicas``;
4. provisioning: schedule the pending pods (and, with the CapacityBuffer gate, the buffers' virtual pods after
   them), create NodeClaims, send pod events, write the buffers' status;
   then proactive replacement on rebalance recommendations (``rebalance.replacement``, opt-in per NodePool):
   launch replacements, delete the old NodeClaims whose replacements are initialized;
5. the lifecycle of every NodeClaim that needs a step (the ones just created included): launch,
   registration, initialization, liveness;
6. NodePool status (conditions and resources in use, counting what this pass created and launched), and with
   ENABLE_ZONAL_SHIFT the ``ZonalShiftActive`` / ``ZonalShiftCleared`` events of the zones ARC shifted away from or
   gave back since the previous pass (``controllers.zonalshift``);
7. the startup time of pods on Karpenter's nodes that became Ready since the previous pass.

Every step decides from what it reads, so a pass repeated or cut short converges (docs/provisioning.md).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from autoscaler import metrics as m
from autoscaler.apis.v1 import labels as wk
from autoscaler.clock import parse_time, utc_now
from autoscaler.cloudprovider.port import UnavailableOfferings
from autoscaler.controllers.buffers import BufferController, BufferReport, read_buffers
from autoscaler.controllers.lifecycle import LifecycleCloud, LifecycleController, LifecycleResult
from autoscaler.controllers.nodepool import NodePoolController, NodePoolResult
from autoscaler.controllers.overlays import OverlayController, OverlayReport, evaluate_overlays, read_overlays
from autoscaler.controllers.provisioning import ProvisioningCloud, ProvisioningController
from autoscaler.controllers.provisioning.controller import ProvisioningResult
from autoscaler.controllers.provisioning.events import EventThrottle
from autoscaler.controllers.rebalance.replacement import RebalanceReplacement, RebalanceResult
from autoscaler.controllers.state import ClusterState, NodeClassIndex
from autoscaler.controllers.static import StaticController, StaticResult
from autoscaler.controllers.zonalshift import ZonalShiftCloud, ZonalShiftController, ZonalShiftResult
from autoscaler.kube.objects import Node, Pod
from autoscaler.kube.port import Cluster, KubeObject
from autoscaler.metrics import MetricPoint
from autoscaler.settings import FeatureGates


class PassCloud(ProvisioningCloud, LifecycleCloud, ZonalShiftCloud, Protocol):
    """What a pass asks of the cloud: instance types, launches, reads, registration tags and zonal shifts."""


def pod_startup_seconds(
    pods: Sequence[KubeObject], nodes: Sequence[KubeObject], since: datetime | None, until: datetime
) -> list[float]:
    """Creation-to-Ready seconds of the pods on Karpenter's nodes that became Ready in ``[since, until)``:
    each pod is counted by exactly one pass (none when the previous pass is unknown)."""
    if since is None:
        return []
    ours = {node.name for node in map(Node, nodes) if wk.LABEL_NODEPOOL in node.labels}
    durations = []
    for view in map(Pod, pods):
        if view.node_name not in ours:
            continue
        ready = view.condition("Ready")
        if not ready or ready.get("status") != "True":
            continue
        became_ready = parse_time(ready.get("lastTransitionTime"))
        created = view.created_at
        if became_ready and created and since <= became_ready < until:
            durations.append(max((became_ready - created).total_seconds(), 0.0))
    return durations


@dataclass
class PassResult:
    started_at: datetime
    seconds: float
    provisioning: ProvisioningResult
    lifecycle: LifecycleResult
    nodepools: NodePoolResult
    pod_startup_seconds: list[float]
    rebalance: RebalanceResult = field(default_factory=RebalanceResult)
    buffers: BufferReport = field(default_factory=BufferReport)
    overlays: OverlayReport | None = None  # with the NodeOverlay gate on
    static: StaticResult = field(default_factory=StaticResult)
    zonal_shift: ZonalShiftResult = field(default_factory=ZonalShiftResult)

    def metric_points(self) -> list[MetricPoint]:
        """Everything the pass measured, for the handler to publish (names in ``autoscaler.metrics``)."""
        return [
            *self.provisioning.points,
            *self.static.points(),
            *self.rebalance.points(),
            *self.buffers.points(),
            *self.lifecycle.points,
            *self.zonal_shift.points(),
            *(MetricPoint(m.POD_STARTUP_DURATION, seconds, "Seconds") for seconds in self.pod_startup_seconds),
        ]

    def summary(self) -> dict[str, Any]:
        plan = self.provisioning.plan
        return {
            "seconds": round(self.seconds, 3),
            "pods": plan.pods,
            "scheduling_seconds": round(plan.scheduling_seconds, 3),
            "nodeclaims_created": len(self.provisioning.created),
            "unschedulable": len(plan.unschedulable),
            "skipped_nodepools": plan.skipped_nodepools,
            "launched": len(self.lifecycle.launched),
            "registered": len(self.lifecycle.registered),
            "initialized": len(self.lifecycle.initialized),
            "deleted": {reason: len(names) for reason, names in self.lifecycle.deleted.items()},
            "failed": {**dict.fromkeys(self.provisioning.failed, "create failed"), **self.lifecycle.failed},
            "deferred": self.provisioning.deferred + self.lifecycle.deferred,
            "nodepools_not_ready": self.nodepools.not_ready,
            "rebalance": self.rebalance.summary(),
            "buffers": self.buffers.summary(),
            **({"overlays": self.overlays.summary()} if self.overlays is not None else {}),
            "static": self.static.summary(),
            "zonal_shift": self.zonal_shift.summary(),
        }


class ProvisionerPass:
    def __init__(
        self,
        cluster: Cluster,
        cloud: PassCloud,
        unavailable: UnavailableOfferings,
        *,
        nodeclasses: NodeClassIndex | None = None,
        clock: Callable[[], datetime] = utc_now,
        throttle: EventThrottle | None = None,
        timer: Callable[[], float] = time.perf_counter,
        feature_gates: FeatureGates | None = None,
    ) -> None:
        self._cluster, self._clock, self._timer = cluster, clock, timer
        self._nodeclasses = nodeclasses or NodeClassIndex()
        self.provisioning = ProvisioningController(
            cluster, cloud, unavailable, clock=clock, throttle=throttle, timer=timer
        )
        self.rebalance = RebalanceReplacement(cluster, cloud, unavailable, clock)
        self.lifecycle = LifecycleController(cluster, cloud, clock)
        self.nodepools = NodePoolController(cluster, clock, feature_gates)
        self.buffers = BufferController(cluster, clock)
        self.overlays = OverlayController(cluster, clock)
        self._cloud = cloud
        self.static = StaticController(cluster, clock)
        self.zonal_shift = ZonalShiftController(cluster, cloud)
        self._gates = feature_gates or FeatureGates()

    def run(self, time_left: Callable[[], float] = lambda: math.inf, since: datetime | None = None) -> PassResult:
        """One pass. ``since`` is when the previous completed pass started (for pod startup times)."""
        started, timer = self._clock(), self._timer()
        state = ClusterState.read(self._cluster)
        self._nodeclasses.update(state.nodeclasses)
        state.nodepools = self.nodepools.stamp_hashes(state.nodepools, state.nodeclaims)
        buffers = read_buffers(self._cluster) if self._gates.capacity_buffer else None
        if buffers is None:
            self.buffers.warn_gated_off(self._gates.enabled)
        else:
            state.buffer_pods = buffers.pods
        overlaid = self._overlays(state)
        static = self.static.reconcile(state) if self._gates.static_capacity else StaticResult()
        provisioning = self.provisioning.provision(state, time_left)
        plan = provisioning.plan
        buffered = (
            self.buffers.report(buffers, plan.placements, plan.held, plan.buffer_unschedulable)
            if buffers is not None
            else BufferReport()
        )
        rebalance = self.rebalance.reconcile(state, provisioning.created, time_left)
        created = [*static.created, *provisioning.created, *rebalance.outcome.created]
        lifecycle = self.lifecycle.reconcile([*state.nodeclaims, *created], state.nodes, time_left, state.overlays)
        changed = (
            created
            or static.deleted
            or rebalance.outcome.deleted
            or lifecycle.launched
            or lifecycle.registered
            or lifecycle.deleted
        )
        nodeclaims = self._cluster.nodeclaims() if changed else state.nodeclaims
        nodepools = self.nodepools.reconcile(state.nodepools, state.nodeclasses, nodeclaims, state.nodes)
        zonal_shift = self.zonal_shift.reconcile(state.nodepools, state.nodeclasses)
        startup = pod_startup_seconds(state.bound_pods, state.nodes, since, started)
        return PassResult(
            started,
            self._timer() - timer,
            provisioning,
            lifecycle,
            nodepools,
            startup,
            rebalance,
            buffered,
            overlaid,
            static,
            zonal_shift,
        )

    def _overlays(self, state: ClusterState) -> OverlayReport | None:
        """With the gate on: the overlays evaluated onto ``state`` (every later step sees overlaid instance types)
        and their status written; off: a warning event on each overlay."""
        if not self._gates.node_overlay:
            self.overlays.warn_gated_off(self._gates.enabled)
            return None
        overlays = read_overlays(self._cluster)
        return self.overlays.report(overlays, evaluate_overlays(state, self._cloud, overlays, self._clock()))
