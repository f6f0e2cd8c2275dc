"""The static NodePools' reconciler (Karpenter's static provisioning and deprovisioning controllers, StaticCapacity
gate): each static pool keeps ``spec.replicas`` NodeClaims, whatever the pods need.

It runs in every provisioner pass, from the pass's read of the cluster: a ``kubectl scale nodepool`` (an update
of the NodePool), a static NodeClaim deleted (expired, interrupted, repaired, drift-replaced) and the 1-minute
sweep all reach that function. NodeClaims it creates are launched by the same pass's lifecycle step; those it
deletes go through termination (drain first) like any other. Decisions are in ``decisions``.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from autoscaler import metrics as m
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.clock import utc_now
from autoscaler.controllers.nodepool import not_ready_reason
from autoscaler.controllers.provisioning.capacity import nodepool_of
from autoscaler.controllers.provisioning.nodeclaims import to_nodeclaim
from autoscaler.controllers.state import ClusterState
from autoscaler.controllers.state.pods import pods_by_node
from autoscaler.controllers.static.decisions import StaticDecision, decide, is_static, static_nodeclaim
from autoscaler.kube.port import Cluster, ClusterError
from autoscaler.metrics import MetricPoint
from autoscaler.scheduling import Placement, PodRef

log = logging.getLogger(__name__)


@dataclass
class StaticResult:
    decisions: dict[str, StaticDecision] = field(default_factory=dict)  # NodePool -> what it needed
    created: list[NodeClaim] = field(default_factory=list)  # as stored
    deleted: list[str] = field(default_factory=list)  # surplus NodeClaims deleted
    failed: dict[str, str] = field(default_factory=dict)  # write -> why (the next pass tries again)

    def points(self) -> list[MetricPoint]:
        created = Counter((c.metadata.labels or {}).get(wk.LABEL_NODEPOOL, "") for c in self.created)
        return [
            MetricPoint(
                m.NODECLAIMS_CREATED,
                count,
                dimensions=(("capacity_type", ""), ("nodepool", pool), ("reason", "provisioned")),
            )
            for pool, count in sorted(created.items())
        ]

    def summary(self) -> dict[str, Any]:
        return {
            "nodepools": {name: d.summary() for name, d in sorted(self.decisions.items())},
            "created": [c.name for c in self.created],
            "deleted": self.deleted,
            "failed": self.failed,
        }


class StaticController:
    def __init__(self, cluster: Cluster, clock: Callable[[], datetime] = utc_now) -> None:
        self._cluster, self._clock = cluster, clock

    def decide(self, state: ClusterState) -> dict[str, StaticDecision]:
        """What every static NodePool needs now (read-only, for ``autoscaler plan`` too)."""
        now = self._clock()
        classes = {c.name: c for c in state.nodeclasses}
        pods_on = pods_by_node(state.bound_pods)
        return {
            pool.name: decide(pool, state.nodeclaims, state.nodes, pods_on, now, not_ready_reason(pool, classes, now))
            for pool in state.nodepools
            if is_static(pool) and not pool.metadata.deletion_timestamp
        }

    def describe(self, state: ClusterState, existing: Mapping[PodRef, Placement]) -> dict[str, dict[str, Any]]:
        """Per static NodePool, for ``autoscaler plan``: what it needs now (``decide``) and the pending pods that fit
        its nodes (``existing``: the plan's real pods placed on capacity already there)."""
        decisions = self.decide(state)
        pools = nodepool_of(state)
        fits: dict[str, list[str]] = {name: [] for name in decisions}
        for pod, where in existing.items():
            pool = pools.get(where.name)
            if pool in fits:
                fits[pool].append(str(pod))
        return {name: {**d.summary(), "pods": sorted(fits[name])} for name, d in sorted(decisions.items())}

    def reconcile(self, state: ClusterState) -> StaticResult:
        result = StaticResult(self.decide(state))
        pools = {p.name: p for p in state.nodepools}
        for name, decision in result.decisions.items():
            if decision.create or decision.remove or decision.held:
                log.info(
                    "static nodepool %s: %d running, %d replicas: %d to create, %d to remove%s",
                    name,
                    decision.counts.running,
                    decision.replicas,
                    decision.create,
                    len(decision.remove),
                    f" ({decision.held})" if decision.held else "",
                    extra={"decision": "static", "nodepool": name, **decision.summary()},
                )
            pool = pools[name]
            nodeclass = state.nodeclass(pool.spec.template.spec.node_class_ref.name)
            for _ in range(decision.create):
                try:
                    result.created.append(
                        self._cluster.create_nodeclaim(to_nodeclaim(static_nodeclaim(pool), pool, nodeclass))
                    )
                except ClusterError as error:
                    result.failed[f"create for nodepool {name}"] = str(error)
                    break
            for surplus in decision.remove:
                try:
                    self._cluster.delete(surplus.claim.ref)
                except ClusterError as error:
                    result.failed[f"delete {surplus.claim.name}"] = str(error)
                    continue
                result.deleted.append(surplus.claim.name)
        return result
