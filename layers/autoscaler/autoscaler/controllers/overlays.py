"""NodeOverlays through the Cluster port: read them, evaluate them against the NodePools' instance types, report.

Karpenter keeps an in-memory store that its nodeoverlay controller rebuilds (on overlay, NodePool and node class
changes, and every 6 hours) and that every GetInstanceTypes call is decorated with. A stateless function has no
store to keep: each pass that uses instance types (provisioner, disruption, ``autoscaler plan``) evaluates the
overlays it read at the start of the pass (``ClusterState.overlays``), so the prices and capacity it decides on are
never a reconcile behind the overlays. Only the provisioner pass writes their status (``Ready`` from
``ValidationSucceeded``): like Karpenter's controller, one writer per cluster, and the pass that already writes the
NodePools' status from the same read. Evaluated over the NodePools that can launch now (Ready, not static).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from autoscaler.apis.feature_gates import EVENT_REASON, gated_off
from autoscaler.apis.resources import format_resources
from autoscaler.apis.v1alpha1 import NodeOverlay
from autoscaler.apis.v1alpha1.nodeoverlay import NodeOverlayStatus
from autoscaler.cloudprovider.overlays import Overlays, evaluate
from autoscaler.controllers.provisioning.controller import ProvisioningCloud, usable_nodepools
from autoscaler.controllers.state import ClusterState
from autoscaler.controllers.state.custom import read_live
from autoscaler.kube.port import Cluster, ClusterError, Event, ObjectRef

log = logging.getLogger(__name__)


def read_overlays(cluster: Cluster) -> list[NodeOverlay]:
    """The cluster's NodeOverlays (not being deleted); invalid ones skipped. No CRD (404) or no permission (403):
    none."""
    return read_live(cluster, "NodeOverlay", NodeOverlay)


def evaluate_overlays(
    state: ClusterState, cloud: ProvisioningCloud, overlays: list[NodeOverlay], now: datetime
) -> Overlays:
    """Evaluate ``overlays`` against the instance types of the NodePools that can launch, and keep the result on
    ``state`` so that every later ``usable_nodepools`` of the pass answers overlaid instance types."""
    state.overlays = None
    pools, types = usable_nodepools(state, cloud, now, {})
    state.overlays = evaluate(overlays, [(pool, types[pool.name]) for pool in pools])
    return state.overlays


def effective(state: ClusterState, cloud: ProvisioningCloud, now: datetime) -> list[dict[str, Any]]:
    """For ``autoscaler plan``: each instance type the evaluated overlays changed, its cheapest price as the cloud
    offers it and as overlaid, its added capacity and the overlays behind them."""
    evaluated, state.overlays = state.overlays, None
    if evaluated is None:
        return []
    try:
        pools, offered = usable_nodepools(state, cloud, now, {})
    finally:
        state.overlays = evaluated
    rows = []
    for pool in pools:
        for it in offered[pool.name]:
            if (effects := evaluated.effects(pool.name, it.name)) is None:
                continue
            overlaid = evaluated.apply(pool.name, [it])[0]
            added = {r: overlaid.capacity[r] for r in effects.capacity_sources}
            rows.append(
                {
                    "nodepool": pool.name,
                    "instanceType": it.name,
                    "price": round(it.cheapest_price(), 6),
                    "effectivePrice": round(overlaid.cheapest_price(), 6),
                    "capacity": format_resources(added),
                    "overlays": sorted({*effects.price_sources, *effects.capacity_sources.values()}),
                }
            )
    return rows


@dataclass
class OverlayReport:
    applied: list[str] = field(default_factory=list)
    conflicts: dict[str, str] = field(default_factory=dict)
    invalid: dict[str, str] = field(default_factory=dict)
    written: int = 0
    failed: dict[str, str] = field(default_factory=dict)  # overlay -> why its status was not written

    def summary(self) -> dict[str, object]:
        return {"applied": self.applied, "conflicts": sorted(self.conflicts), "invalid": sorted(self.invalid)}


class OverlayController:
    """Writes each overlay's status from an evaluation; warns of overlays the disabled gate leaves inert."""

    def __init__(self, cluster: Cluster, clock: Callable[[], datetime]) -> None:
        self._cluster, self._clock = cluster, clock

    def report(self, overlays: list[NodeOverlay], evaluated: Overlays) -> OverlayReport:
        result = OverlayReport(list(evaluated.applied), dict(evaluated.conflicts), dict(evaluated.invalid))
        now = self._clock()
        for overlay in overlays:
            conditions = evaluated.conditions(overlay, now)
            if overlay.status is not None and overlay.status.conditions == conditions:
                continue
            try:
                self._cluster.write_status(
                    overlay.model_copy(update={"status": NodeOverlayStatus(conditions=conditions)})
                )
                result.written += 1
            except ClusterError as error:  # a conflict included: the next pass writes from fresh state
                result.failed[overlay.name] = str(error)
        return result

    def warn_gated_off(self, enabled: Callable[[str], bool]) -> int:
        """With the NodeOverlay gate off: one warning event per overlay (deduped by the adapter); how many."""
        overlays = read_overlays(self._cluster)
        for overlay in overlays:
            for ignored in gated_off(overlay, enabled):
                ref = ObjectRef(overlay.kind, overlay.name, uid=overlay.metadata.uid)
                self._cluster.record_event(Event(ref, EVENT_REASON, str(ignored), "Warning"))
        return len(overlays)
