"""Where a pass put each buffer's virtual pods, and the status that says so. Pure.

The conditions are the API owner's, with Karpenter's reasons: ``ReadyForProvisioning`` (the pod shape resolved, or
why not) and ``Provisioning``: True ``FitsExistingCapacity`` when every virtual pod fits on capacity already there
(nodes, and NodeClaims still launching, as Karpenter counts them), False ``RequiresNewCapacity`` when some needed a
new NodeClaim or fit nowhere, False ``NotReadyForProvisioning`` / ``BufferEmpty`` without pods to place.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from autoscaler.apis.autoscaling.capacitybuffer import (
    PROVISIONING,
    READY_FOR_PROVISIONING,
    CapacityBuffer,
    CapacityBufferStatus,
    LocalObjectRef,
)
from autoscaler.apis.v1.common import ConditionStatus
from autoscaler.apis.v1.conditions import set_condition
from autoscaler.controllers.buffers.demand import BufferKey, Resolution
from autoscaler.scheduling import Placement, PodRef

FITS_EXISTING_CAPACITY = "FitsExistingCapacity"
REQUIRES_NEW_CAPACITY = "RequiresNewCapacity"
NOT_READY_FOR_PROVISIONING = "NotReadyForProvisioning"
BUFFER_EMPTY = "BufferEmpty"


@dataclass
class Provisioned:
    """One buffer's virtual pods by where the pass put them."""

    on_nodes: int = 0  # on nodes already there: headroom a real pod can use now
    in_flight: int = 0  # on NodeClaims not yet nodes (held on the one launched for them, or fitting on one)
    new: int = 0  # on NodeClaims this pass decided on
    failed: int = 0  # nowhere

    @property
    def existing(self) -> int:
        return self.on_nodes + self.in_flight


def classify(
    virtual: Mapping[PodRef, BufferKey],
    placements: Mapping[PodRef, Placement],
    held: Mapping[PodRef, str],
    unschedulable: Mapping[PodRef, object],
) -> dict[BufferKey, Provisioned]:
    """Each buffer's counts, from the pass's placements, held pods and failures of its ``virtual`` pods."""
    out: dict[BufferKey, Provisioned] = {}
    for ref, key in virtual.items():
        counts = out.setdefault(key, Provisioned())
        where = placements.get(ref)
        if ref in held or (where is not None and where.kind == "nodeclaim"):
            counts.in_flight += 1
        elif where is not None and where.kind == "node":
            counts.on_nodes += 1
        elif where is not None:
            counts.new += 1
        elif ref in unschedulable:
            counts.failed += 1
    return out


def wanted_status(
    buffer: CapacityBuffer, resolution: Resolution, provisioned: Provisioned | None, now: datetime
) -> CapacityBufferStatus:
    """``buffer``'s status after a pass that placed its virtual pods as ``provisioned`` says (None: not placed)."""
    current = buffer.status or CapacityBufferStatus()
    generation = buffer.metadata.generation
    conditions = set_condition(
        current.conditions,
        READY_FOR_PROVISIONING,
        "True" if resolution.resolved else "False",
        resolution.reason,
        resolution.message,
        now=now,
        observed_generation=generation,
    )
    template = resolution.template_name
    update = {
        "pod_template_ref": LocalObjectRef(name=template) if template else None,
        "pod_template_generation": resolution.template_generation if template else None,
        "replicas": resolution.replicas if resolution.resolved else current.replicas,
        "provisioning_strategy": buffer.spec.provisioning_strategy,
    }
    provisioning = _provisioning(resolution, provisioned)
    if provisioning is not None:
        status, reason, message = provisioning
        conditions = set_condition(
            conditions, PROVISIONING, status, reason, message, now=now, observed_generation=generation
        )
    return current.model_copy(update={**update, "conditions": conditions})


def _provisioning(resolution: Resolution, done: Provisioned | None) -> tuple[ConditionStatus, str, str] | None:
    if not resolution.resolved:
        return "False", NOT_READY_FOR_PROVISIONING, "Buffer is not ReadyForProvisioning"
    if resolution.replicas == 0:
        return "False", BUFFER_EMPTY, "Buffer has zero desired replicas"
    if done is None:
        return None
    if done.new or done.failed:
        message = f"{done.new}/{resolution.replicas} virtual pods required new capacity, {done.failed} failed"
        return "False", REQUIRES_NEW_CAPACITY, message
    if done.existing == resolution.replicas:
        launching = f" ({done.in_flight} on NodeClaims still launching)" if done.in_flight else ""
        message = f"All {resolution.replicas} virtual pods fit on existing capacity{launching}"
        return "True", FITS_EXISTING_CAPACITY, message
    return None
