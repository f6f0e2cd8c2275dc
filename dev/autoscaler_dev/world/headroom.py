"""Headroom, as the world measures it: how many of the CapacityBuffers' chunks fit, right now, in the room left on
Ready nodes of Karpenter's (allocatable less the requests of the pods bound there), each buffer counted up to the
chunks it asks for. Independent of what the provisioner believes: resources only (no taints, affinity or
topology), first fit over nodes in name order, buffers in name order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from autoscaler.apis.autoscaling.capacitybuffer import API_VERSION, CapacityBuffer
from autoscaler.apis.resources import parse_resources
from autoscaler.apis.v1 import labels as wk
from autoscaler.controllers.buffers.demand import referenced, resolve
from autoscaler.kube.objects import Node, Pod
from autoscaler.kube.resources import KINDS, is_terminal
from autoscaler.scheduling.pods import PodSpecError, pod_requests

if TYPE_CHECKING:
    from autoscaler_dev.kube_emulator.emulator import KubeEmulator
    from autoscaler_dev.world.timeline import Timeline

KubeObject = Mapping[str, Any]


def _wanted(kube: KubeEmulator) -> list[tuple[dict[str, int], int]]:
    """Each buffer's chunk requests and chunk count (resolved as the core resolves them)."""
    wanted = []
    for body in sorted(kube.list(API_VERSION, "CapacityBuffer"), key=lambda b: str(b["metadata"].get("name"))):
        buffer = CapacityBuffer.model_validate(body)
        ref = referenced(buffer)
        namespace = buffer.metadata.namespace or "default"
        source = None
        if ref is not None:
            kind = KINDS[ref[0]]
            source = next(
                (o for o in kube.list(kind.api_version, ref[0], namespace) if o["metadata"]["name"] == ref[1]), None
            )
        resolution = resolve(buffer, source)
        try:
            requests = pod_requests(resolution.template.get("spec") or {})
        except PodSpecError:
            continue
        if resolution.resolved and resolution.replicas and requests:
            wanted.append((requests, resolution.replicas))
    return wanted


def headroom(kube: KubeEmulator, pods: Sequence[KubeObject], nodes: Sequence[KubeObject]) -> int | None:
    """Buffer chunks that fit on Ready nodes now; None when there is no CapacityBuffer."""
    wanted = _wanted(kube)
    if not wanted:
        return None
    used: dict[str, dict[str, int]] = {}
    for pod in pods:
        view = Pod(pod)
        if view.node_name and not is_terminal(pod):
            total = used.setdefault(view.node_name, {})
            try:
                for name, amount in pod_requests(view.spec).items():
                    total[name] = total.get(name, 0) + amount
            except PodSpecError:
                continue
    free = {}
    for node in sorted(map(Node, nodes), key=lambda n: n.name):
        if node.ready and wk.LABEL_NODEPOOL in node.labels and not node.deleting:
            left = parse_resources(node.allocatable)
            free[node.name] = {k: v - used.get(node.name, {}).get(k, 0) for k, v in left.items()}
    fitted = 0
    for requests, asked in wanted:
        count = asked
        for room in free.values():
            while count and all(room.get(k, 0) >= v for k, v in requests.items()):
                for k, v in requests.items():
                    room[k] -= v
                count -= 1
                fitted += 1
    return fitted


def headroom_figures(timeline: Timeline) -> dict[str, int | None]:
    """The summary's headroom keys: pods that started without waiting for a launch, and the buffers' headroom
    over the run (after the first node joined: before it, no buffer can have room) and at its end."""
    seen = [s.headroom for s in timeline.samples if s.headroom is not None and s.nodes]
    return {
        "pods_started_without_launch": timeline.started_without_launch,
        "buffer_headroom_min": min(seen) if seen else None,
        "buffer_headroom_final": seen[-1] if seen else None,
    }
