"""Zonal-shift events on NodePools (Karpenter-AWS's ``arczonalshift`` controller), a step of the provisioner's pass.

Each pass compares the zone IDs ARC shifts the cluster away from with the set the previous pass saw, and tells each
NodePool that could launch in a zone newly shifted (a Warning ``ZonalShiftActive``) or no longer shifted (a Normal
``ZonalShiftCleared``). A NodePool could launch in a zone when its EC2NodeClass has a subnet there (``status.subnets``
maps zone IDs to the zone names NodePools name) and its requirements on ``topology.kubernetes.io/zone`` and
``topology.k8s.aws/zone-id`` admit it (none: every zone). The previous set lives in the controller object, which a
warm container keeps; a cold start begins from no zone and so announces the shifts still active again.

:func:`zonal_shift_events` decides (pure); :class:`ZonalShiftController` keeps the previous set and publishes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from autoscaler import metrics as m
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.ec2nodeclass import EC2NodeClass
from autoscaler.apis.v1.nodepool import NodePool
from autoscaler.cloudprovider.requirements import Requirement, compatible
from autoscaler.cloudprovider.zonalshift import ShiftedZones
from autoscaler.controllers.nodepool import nodeclass_of
from autoscaler.kube.port import Cluster, Event, ObjectRef
from autoscaler.metrics import MetricPoint

ZONAL_SHIFT_ACTIVE = "ZonalShiftActive"
ZONAL_SHIFT_CLEARED = "ZonalShiftCleared"
ZONE_KEYS = (wk.LABEL_ZONE, wk.LABEL_ZONE_ID)


class ZonalShiftCloud(Protocol):
    def shifted_zones(self) -> ShiftedZones:
        """The zone IDs an applied, unexpired zonal shift or autoshift moves the cluster away from now, and how many
        reads of ARC failed since the previous call (the count resets). Never raises: an unreadable ARC answers the
        last zones read (none before the first). Without ENABLE_ZONAL_SHIFT: no zone, no error, ARC never called."""
        ...


@dataclass(frozen=True)
class PoolZones:
    """What the decision needs of one NodePool: who it is, its class's zones and its requirements."""

    nodepool: ObjectRef
    zone_names: Mapping[str, str]  # zone ID -> zone name, from the class's status.subnets
    requirements: Sequence[Requirement]

    def admits(self, zone_id: str) -> str | None:
        """The zone's name when the NodePool could launch there, else None."""
        name = self.zone_names.get(zone_id)
        if name is None:
            return None
        labels = {wk.LABEL_ZONE: name, wk.LABEL_ZONE_ID: zone_id}
        return name if compatible(labels, self.requirements, ZONE_KEYS) else None


def pool_zones(nodepools: Iterable[NodePool], nodeclasses: Iterable[EC2NodeClass]) -> list[PoolZones]:
    """Every NodePool whose EC2NodeClass exists, with that class's zones (a class not resolved yet has none)."""
    classes = {c.name: c for c in nodeclasses}
    pools = []
    for nodepool in nodepools:
        nodeclass = nodeclass_of(nodepool, classes)
        if nodeclass is None:
            continue
        subnets = (nodeclass.status.subnets or []) if nodeclass.status else []
        zones = {s.zone_id: s.zone for s in subnets if s.zone_id}
        ref = ObjectRef("NodePool", nodepool.name, uid=nodepool.metadata.uid)
        pools.append(PoolZones(ref, zones, nodepool.spec.template.spec.requirements))
    return pools


def zonal_shift_events(previous: frozenset[str], current: frozenset[str], pools: Iterable[PoolZones]) -> list[Event]:
    """The events a change from ``previous`` to ``current`` shifted zone IDs means for ``pools``, in a stable order."""
    events = []
    for pool in pools:
        for zone_id in sorted(current - previous):
            if name := pool.admits(zone_id):
                message = f"ARC shifted the cluster away from zone {name} ({zone_id}): no launch there until it ends"
                events.append(Event(pool.nodepool, ZONAL_SHIFT_ACTIVE, message, "Warning"))
        for zone_id in sorted(previous - current):
            if name := pool.admits(zone_id):
                message = f"The zonal shift away from zone {name} ({zone_id}) ended: launches may use it again"
                events.append(Event(pool.nodepool, ZONAL_SHIFT_CLEARED, message))
    return events


def read_error_points(read_errors: int) -> list[MetricPoint]:
    """``karpenter_zonal_shift_read_errors_total`` for the ARC reads that failed since the previous reading (a
    :class:`ShiftedZones`), published by every function that reads ARC: none when none failed."""
    return [MetricPoint(m.ZONAL_SHIFT_READ_ERRORS, read_errors)] if read_errors else []


@dataclass
class ZonalShiftResult:
    shifted: frozenset[str] = frozenset()
    events: list[Event] = field(default_factory=list)
    read_errors: int = 0

    def points(self) -> list[MetricPoint]:
        return read_error_points(self.read_errors)

    def summary(self) -> dict[str, object]:
        published = [f"{e.reason} {e.regarding.name}" for e in self.events]
        return {"shifted": sorted(self.shifted), "events": published, "read_errors": self.read_errors}


class ZonalShiftController:
    def __init__(self, cluster: Cluster, cloud: ZonalShiftCloud) -> None:
        self._cluster, self._cloud = cluster, cloud
        self._previous: frozenset[str] = frozenset()  # what the previous pass of this container saw

    def reconcile(self, nodepools: Sequence[NodePool], nodeclasses: Sequence[EC2NodeClass]) -> ZonalShiftResult:
        reading = self._cloud.shifted_zones()
        current = reading.zone_ids
        events = []
        if current != self._previous:
            events = zonal_shift_events(self._previous, current, pool_zones(nodepools, nodeclasses))
            for event in events:  # failures are logged by the adapter: an event never fails the pass
                self._cluster.record_event(event)
        self._previous = current
        return ZonalShiftResult(current, events, reading.read_errors)
