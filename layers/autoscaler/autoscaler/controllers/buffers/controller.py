"""CapacityBuffers through the Cluster port: read them with what they refer to, write their status after a pass.

Karpenter splits this between a buffer controller (resolve, status replicas, ReadyForProvisioning) and the
provisioner (virtual pods, Provisioning); a stateless pass does both from the same read, so the virtual pods are
never a reconcile behind the buffer. Unreadable buffers are logged and counted as skipped, never a failed pass;
a cluster without the CRD (404) or without the permission (403) has no buffers.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from autoscaler import metrics as m
from autoscaler.apis.autoscaling.capacitybuffer import CapacityBuffer
from autoscaler.apis.feature_gates import EVENT_REASON, gated_off
from autoscaler.clock import utc_now
from autoscaler.controllers.buffers.demand import BufferKey, Resolution, buffer_of, key_of, referenced, resolve
from autoscaler.controllers.buffers.demand import virtual_pods as build_virtual_pods
from autoscaler.controllers.buffers.status import Provisioned, classify, wanted_status
from autoscaler.controllers.state.custom import read_live
from autoscaler.controllers.state.pods import pod_ref
from autoscaler.kube.port import Cluster, ClusterError, Event, ObjectRef
from autoscaler.metrics import MetricPoint
from autoscaler.scheduling import Placement, PodRef

log = logging.getLogger(__name__)
KubeObject = Mapping[str, Any]


@dataclass
class Buffers:
    """Every CapacityBuffer of one read, each with its resolution, and their virtual pods."""

    buffers: list[CapacityBuffer] = field(default_factory=list)
    resolutions: dict[BufferKey, Resolution] = field(default_factory=dict)
    pods: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # buffers that could not be read, with why

    def virtual(self) -> dict[PodRef, BufferKey]:
        """Each virtual pod's ref and the buffer it stands for."""
        return {pod_ref(p): key for p in self.pods if (key := buffer_of(p)) is not None}


def list_buffers(cluster: Cluster, read: Buffers) -> list[CapacityBuffer]:
    """The cluster's CapacityBuffers that are not being deleted (those keep no capacity); invalid ones skipped."""
    return read_live(cluster, "CapacityBuffer", CapacityBuffer, read.skipped)


def read_buffers(cluster: Cluster) -> Buffers:
    """Every buffer with its resolution and virtual pods; what each refers to is read once. A buffer whose
    reference cannot be read now (other than not found) is skipped this pass, its status left as it is."""
    read = Buffers()
    sources: dict[tuple[str, str, str], KubeObject | None] = {}
    for buffer in list_buffers(cluster, read):
        namespace = key_of(buffer)[0]
        wanted = referenced(buffer)
        source = None
        if wanted is not None:
            index = (wanted[0], namespace, wanted[1])
            try:
                if index not in sources:
                    sources[index] = cluster.get(ObjectRef(wanted[0], wanted[1], namespace=namespace))
            except ClusterError as error:
                log.warning("skipping CapacityBuffer %s/%s: reading its %s: %s", *key_of(buffer), wanted[0], error)
                read.skipped.append(f"{namespace}/{buffer.name}: {error}")
                continue
            source = sources[index]
        resolution = resolve(buffer, source)
        read.buffers.append(buffer)
        read.resolutions[key_of(buffer)] = resolution
        read.pods += build_virtual_pods(buffer, resolution)
    return read


@dataclass
class BufferReport:
    provisioned: dict[BufferKey, Provisioned] = field(default_factory=dict)
    desired: dict[BufferKey, int] = field(default_factory=dict)
    written: int = 0
    failed: dict[str, str] = field(default_factory=dict)  # buffer -> why its status was not written
    skipped: int = 0

    def points(self) -> list[MetricPoint]:
        out = [MetricPoint(m.CAPACITY_BUFFER_SKIPPED, self.skipped)] if self.skipped else []
        for key, desired in sorted(self.desired.items()):
            dims = (("buffer", f"{key[0]}/{key[1]}"),)
            done = self.provisioned.get(key, Provisioned())
            out += [
                MetricPoint(m.CAPACITY_BUFFER_DESIRED_REPLICAS, desired, dimensions=dims),
                MetricPoint(m.CAPACITY_BUFFER_READY_REPLICAS, done.on_nodes, dimensions=dims),
                MetricPoint(m.CAPACITY_BUFFER_LAUNCHING_REPLICAS, done.in_flight + done.new, dimensions=dims),
            ]
        return out

    def summary(self) -> dict[str, Any]:
        return {
            f"{k[0]}/{k[1]}": {"desired": self.desired[k], **vars(self.provisioned.get(k, Provisioned()))}
            for k in sorted(self.desired)
        }


class BufferController:
    """Writes each buffer's status from where a pass put its virtual pods; warns of buffers a disabled gate
    leaves inert."""

    def __init__(self, cluster: Cluster, clock: Callable[[], datetime] = utc_now) -> None:
        self._cluster, self._clock = cluster, clock

    def report(
        self,
        read: Buffers,
        placements: Mapping[PodRef, Placement],
        held: Mapping[PodRef, str],
        unschedulable: Mapping[PodRef, object],
    ) -> BufferReport:
        result = BufferReport(skipped=len(read.skipped))
        result.provisioned = classify(read.virtual(), placements, held, unschedulable)
        now = self._clock()
        for buffer in read.buffers:
            key = key_of(buffer)
            resolution = read.resolutions[key]
            result.desired[key] = resolution.replicas if resolution.resolved else 0
            wanted = wanted_status(buffer, resolution, result.provisioned.get(key), now)
            if wanted == buffer.status:
                continue
            try:
                self._cluster.write_status(buffer.model_copy(update={"status": wanted}))
                result.written += 1
            except ClusterError as error:  # a conflict included: the next pass writes from fresh state
                result.failed[f"{key[0]}/{key[1]}"] = str(error)
        return result

    def warn_gated_off(self, enabled: Callable[[str], bool]) -> int:
        """With the CapacityBuffer gate off: one warning event per buffer (deduped by the adapter); how many."""
        buffers = list_buffers(self._cluster, Buffers())
        for buffer in buffers:
            for ignored in gated_off(buffer, enabled):
                ref = ObjectRef(buffer.kind, buffer.name, namespace=key_of(buffer)[0], uid=buffer.metadata.uid)
                self._cluster.record_event(Event(ref, EVENT_REASON, str(ignored), "Warning"))
        return len(buffers)
