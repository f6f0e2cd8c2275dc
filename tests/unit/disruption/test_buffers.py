"""CapacityBuffers as demand in disruption: a node holding only a buffer's room is not empty, and a consolidation
that would take that room must pay for it again (Karpenter: emptiness honours buffer pods, the consolidation
simulation places the virtual pods too)."""

from __future__ import annotations

from typing import Any

from tests.unit.disruption.world import World, node_and_claim, pod, pool

WIDE_OPEN = {"budgets": [{"nodes": "100%"}]}
CHUNK = {"containers": [{"name": "app", "resources": {"requests": {"cpu": "1", "memory": "2Gi"}}}]}


def _buffer(replicas: int) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "autoscaling.x-k8s.io/v1beta1",
            "kind": "CapacityBuffer",
            "metadata": {"name": "web", "namespace": "default", "uid": "uid-buf"},
            "spec": {"podTemplateRef": {"name": "chunk"}, "replicas": replicas},
        },
        {
            "apiVersion": "v1",
            "kind": "PodTemplate",
            "metadata": {"name": "chunk", "namespace": "default"},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": CHUNK},
        },
    ]


def test_a_node_holding_only_buffer_room_is_not_empty() -> None:
    nodepool = pool(disruption=WIDE_OPEN)
    world = World.of(nodepool, *node_and_claim("n0", nodepool), *_buffer(2))
    assert world.controller().assess().decisions.command is not None  # gate off: the node is empty
    found = world.controller(capacity_buffers=True).assess()
    (candidate,) = found.candidates.candidates
    assert len(candidate.buffer_pods) == 2 and not candidate.empty
    command = found.decisions.command  # not deleted as empty: at most replaced by a cheaper node holding the room
    assert command is not None and command.consolidation_type == "single" and command.decision == "replace"
    (replacement,) = command.replacements
    assert {p.name for p in replacement.pods} == {"capacity-buffer-web-1", "capacity-buffer-web-2"}


def test_a_consolidation_that_takes_buffer_room_must_replace_it() -> None:
    # n0 (4 cpu) runs 2.5 cpu of pods; n1 (4 cpu) holds 3 chunks of buffer room. Deleting n0 moves its pods into
    # n1's room: fine without the buffer, a replacement (no saving) with it.
    nodepool = pool(disruption=WIDE_OPEN)
    pods = [pod("a", "node-n0", cpu="1500m"), pod("b", "node-n0", cpu="1")]
    objects = [*node_and_claim("n0", nodepool), *node_and_claim("n1", nodepool), *pods, *_buffer(3)]
    without = World.of(nodepool, *objects).controller().assess().decisions.command
    assert without is not None and without.decision == "delete"
    found = World.of(nodepool, *objects).controller(capacity_buffers=True).assess()
    command = found.decisions.command
    assert command is None or command.decision != "delete"
