"""How far each workload's running pods are from even over the zones Karpenter's nodes are in: what a zonal
topology spread constraint's ``maxSkew`` bounds (the observer's ``max_zone_skew``, the invariant
``zone_skew_above_max_skew``)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

from autoscaler.apis.v1 import labels as wk
from autoscaler.kube.objects import Pod

if TYPE_CHECKING:
    from autoscaler_dev.world.runner import World


@dataclass(frozen=True)
class ZoneSkew:
    workload: str
    skew: int  # most pods in a zone minus fewest (a zone with none counting 0)
    max_skew: int  # the tightest zonal constraint's
    hard: bool  # some zonal constraint is DoNotSchedule
    scaled_down: bool  # the workload's replicas were lowered: the skew its scale-down left is not the autoscaler's


def zone_skews(sim: World) -> list[ZoneSkew]:
    """One entry per workload with a zonal topology spread constraint (none when Karpenter has no node)."""
    nodes = [n for n in sim.kube.list("v1", "Node") if wk.LABEL_NODEPOOL in (n["metadata"].get("labels") or {})]
    zone_of = {n["metadata"]["name"]: n["metadata"]["labels"].get(wk.LABEL_ZONE, "") for n in nodes}
    zones = set(zone_of.values())
    if not zones:
        return []
    pods = [p for p in sim.kube.list("v1", "Pod") if Pod(p).phase == "Running" and not Pod(p).deleting]
    skews = []
    for name, workload in sim.actors.workloads.items():
        constraints = Pod(workload.template).spec.get("topologySpreadConstraints") or ()
        zonal = [c for c in constraints if c.get("topologyKey") == wk.LABEL_ZONE]
        if not zonal:
            continue
        counts = Counter(zone_of.get(str(p["spec"].get("nodeName")), "") for p in pods if workload.owns(p))
        skews.append(
            ZoneSkew(
                name,
                max(counts[z] for z in zones) - min(counts[z] for z in zones),
                min(int(c.get("maxSkew", 1)) for c in zonal),
                any(c.get("whenUnsatisfiable", "DoNotSchedule") == "DoNotSchedule" for c in zonal),
                workload.scaled_down,
            )
        )
    return skews
