"""What a CapacityBuffer asks for: its pod shape resolved, its chunk count, and the virtual pods that stand for
the chunks in the scheduling simulation. Pure.

As Karpenter v1.14.1 (its capacitybuffer controller and virtual pod cache) does it:

- the pod shape is the PodTemplate's (``podTemplateRef``, in the buffer's namespace) or the workload's pod template
  (``scalableRef``: a Deployment, StatefulSet or ReplicaSet of group apps, which an empty apiGroup means);
- the chunk count is the larger of ``replicas`` and ``percentage`` of the workload's replicas (rounded up, at least
  one when both are positive; a PodTemplate has no replicas), capped by how many chunks ``limits`` hold (for each
  resource both name, limit over request, rounded down; the least of them); ``limits`` alone give the count;
- a virtual pod is the template's pod without a node name, PVC-backed or ephemeral volumes (their claims will
  never exist), at the lowest priority, with the template's labels (topology and affinity see it as the workload's
  pod) and deterministic names and UIDs, so that a NodeClaim's nominations find the same pods next pass.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from autoscaler.apis.autoscaling.capacitybuffer import (
    BUFFER_NAME_ANNOTATION,
    BUFFER_NAMESPACE_ANNOTATION,
    SCALABLE_KINDS,
    VIRTUAL_POD_ANNOTATION,
    VIRTUAL_POD_PRIORITY,
    CapacityBuffer,
)
from autoscaler.apis.resources import parse_resources
from autoscaler.scheduling.pods import PodSpecError, pod_requests

KubeObject = Mapping[str, Any]
BufferKey = tuple[str, str]  # (namespace, name)

# ReadyForProvisioning reasons (Karpenter's words for them).
RESOLVED = "Resolved"
POD_TEMPLATE_NOT_FOUND = "PodTemplateNotFound"
SCALABLE_REF_NOT_FOUND = "ScalableRefNotFound"
RESOLUTION_FAILED = "ResolutionFailed"


@dataclass(frozen=True)
class Resolution:
    """A buffer's pod shape and chunk count, or why it has none (``reason`` other than ``RESOLVED``)."""

    reason: str
    message: str
    template: KubeObject = field(default_factory=dict)  # a PodTemplateSpec: metadata (labels) and spec
    replicas: int = 0
    template_name: str | None = None  # with podTemplateRef: the PodTemplate and its generation, for the status
    template_generation: int | None = None

    @property
    def resolved(self) -> bool:
        return self.reason == RESOLVED


def key_of(buffer: CapacityBuffer) -> BufferKey:
    return buffer.metadata.namespace or "default", buffer.name


def referenced(buffer: CapacityBuffer) -> tuple[str, str] | None:
    """The (kind, name) of what ``buffer`` takes its pod shape from, in its namespace; None for an unsupported
    reference (no object to read)."""
    spec = buffer.spec
    if spec.pod_template_ref is not None:
        return "PodTemplate", spec.pod_template_ref.name
    ref = spec.scalable_ref
    if ref is None or (ref.api_group or "apps") != "apps" or ref.kind not in SCALABLE_KINDS:
        return None
    return ref.kind, ref.name


def resolve(buffer: CapacityBuffer, source: KubeObject | None) -> Resolution:
    """``buffer``'s shape and count, given the object ``referenced`` names (None: not found)."""
    spec = buffer.spec
    if spec.pod_template_ref is None and spec.scalable_ref is None:
        return Resolution(RESOLUTION_FAILED, "Neither podTemplateRef nor scalableRef is set")
    wanted = referenced(buffer)
    if wanted is None:
        ref = spec.scalable_ref
        assert ref is not None  # a podTemplateRef is always supported
        return Resolution(RESOLUTION_FAILED, f"unsupported scalableRef {ref.api_group or 'apps'}/{ref.kind}")
    kind, name = wanted
    if source is None:
        reason = POD_TEMPLATE_NOT_FOUND if kind == "PodTemplate" else SCALABLE_REF_NOT_FOUND
        return Resolution(reason, f"{kind} {buffer.metadata.namespace or 'default'}/{name} not found")
    if kind == "PodTemplate":
        template = source.get("template") or {}
        counts: list[int] = []
        named, generation = name, int((source.get("metadata") or {}).get("generation") or 0) or None
    else:
        template = (source.get("spec") or {}).get("template") or {}
        scaled = (source.get("spec") or {}).get("replicas")
        scaled = 1 if scaled is None else int(scaled)
        counts = [percentage_replicas(scaled, spec.percentage)] if spec.percentage is not None and scaled > 0 else []
        named, generation = None, None
    if spec.replicas is not None:
        counts.append(spec.replicas)
    try:
        replicas = capped(max(counts) if counts else None, spec.limits, template.get("spec") or {})
    except PodSpecError as error:
        return Resolution(RESOLUTION_FAILED, f"the pod template's requests cannot be read: {error}")
    return Resolution(RESOLVED, "Pod template resolved successfully", template, replicas, named, generation)


def percentage_replicas(scaled: int, percentage: int) -> int:
    """``percentage`` of ``scaled`` replicas, rounded up; at least one when both are positive."""
    count = math.ceil(scaled * percentage / 100)
    return max(count, 1) if scaled > 0 and percentage > 0 else count


def capped(desired: int | None, limits: Mapping[str, Any] | None, pod_spec: Mapping[str, Any]) -> int:
    """``desired`` chunks (None: not set) within ``limits``: the least, over the resources both the limits and the
    chunk's requests name, of limit // request; limits that constrain nothing leave ``desired`` (or 0)."""
    if limits:
        requests = pod_requests(pod_spec)
        budget = parse_resources(limits)
        fits = [budget[name] // amount for name, amount in requests.items() if amount > 0 and name in budget]
        if fits:
            return min(desired, *fits) if desired is not None else min(fits)
    return desired or 0


def virtual_pods(buffer: CapacityBuffer, resolution: Resolution) -> list[dict[str, Any]]:
    """The ``resolution.replicas`` virtual pods of ``buffer`` (none unless resolved)."""
    if not resolution.resolved or resolution.replicas <= 0:
        return []
    namespace, name = key_of(buffer)
    metadata = resolution.template.get("metadata") or {}
    spec = _sanitized(resolution.template.get("spec") or {})
    uid = buffer.metadata.uid or f"{namespace}/{name}"
    created = buffer.metadata.creation_timestamp
    return [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"capacity-buffer-{name}-{i}",
                "namespace": namespace,
                "uid": f"{uid}-{i}",
                "labels": dict(metadata.get("labels") or {}),
                "annotations": {
                    VIRTUAL_POD_ANNOTATION: "true",
                    BUFFER_NAME_ANNOTATION: name,
                    BUFFER_NAMESPACE_ANNOTATION: namespace,
                },
                **({"creationTimestamp": created} if created else {}),
            },
            "spec": spec,
            "status": {
                "phase": "Pending",
                "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
            },
        }
        for i in range(1, resolution.replicas + 1)
    ]


def buffer_of(pod: KubeObject) -> BufferKey | None:
    """The buffer a virtual pod stands for; None for any other pod."""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    if annotations.get(VIRTUAL_POD_ANNOTATION) != "true":
        return None
    return str(annotations.get(BUFFER_NAMESPACE_ANNOTATION, "")), str(annotations.get(BUFFER_NAME_ANNOTATION, ""))


def _sanitized(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The template's pod spec as a virtual pod's: no node name, no claim-backed volume (nor its mounts)."""
    dropped = {
        str(v.get("name"))
        for v in spec.get("volumes") or ()
        if isinstance(v, Mapping) and (v.get("persistentVolumeClaim") or v.get("ephemeral"))
    }
    out: dict[str, Any] = {k: v for k, v in spec.items() if k != "nodeName"}
    out["priority"] = VIRTUAL_POD_PRIORITY
    if dropped:
        out["volumes"] = [v for v in spec.get("volumes") or () if str(v.get("name")) not in dropped]
        for key in ("containers", "initContainers"):
            if key in spec:
                out[key] = [_without_mounts(c, dropped) for c in spec.get(key) or ()]
    return out


def _without_mounts(container: Mapping[str, Any], dropped: set[str]) -> dict[str, Any]:
    mounts = [m for m in container.get("volumeMounts") or () if str(m.get("name")) not in dropped]
    return {**container, "volumeMounts": mounts}
