"""A node's requirements narrowed by a pod: the pod's own, one of its volume alternatives, its topology. Pure.

Existing nodes and new NodeClaims ask this the same way once their own checks (taints, host ports,
resources) pass. What ``allow`` lets a node leave undefined differs: nothing on a node whose labels are
fixed, the instance-type labels on a NodeClaim still to be launched. What a NodeClaim checks next (instance
types left, settled domains, minValues) is the ``accept`` callback, tried per volume alternative.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from autoscaler.scheduling.podstate import PodState
from autoscaler.scheduling.requirements import Requirements
from autoscaler.scheduling.topology import Topology, TopologyError

T = TypeVar("T")


def as_narrowed(requirements: Requirements) -> Requirements:
    """The ``accept`` of a node that needs nothing beyond the narrowed requirements."""
    return requirements


def narrow_for_pod(
    node: Requirements,
    state: PodState,
    topology: Topology,
    allow: frozenset[str],
    accept: Callable[[Requirements], T | str],
) -> T | str:
    """``accept``'s answer for the first volume alternative that leaves the pod a place on ``node``, or why
    none does (the last alternative's reason: with one alternative, the precise one).

    Each alternative is merged into ``node`` with the pod's requirements, then narrowed to the domains the
    pod's topology allows there; ``accept`` returns a string to reject an alternative."""
    reason = node.incompatibility(state.requirements, allow)
    if reason is not None:
        return f"incompatible requirements, {reason}"
    merged = node.merged(state.requirements)
    last = "incompatible volume requirements"
    for volume in state.volumes or (None,):
        candidate = merged
        if volume is not None:
            if (conflict := merged.conflict(volume)) is not None:
                last = f"incompatible volume requirements on {conflict}"
                continue
            candidate = merged.merged(volume)
        try:
            narrowed = topology.add_requirements(state.pod, state.groups, state.strict, candidate)
        except TopologyError as error:
            last = str(error)
            continue
        # A domain the node cannot define (outside ``allow``) cannot be where the pod's topology wants it.
        if narrowed is not candidate and (reason := candidate.incompatibility(narrowed, allow)):
            last = f"incompatible topology requirements, {reason}"
            continue
        outcome = accept(narrowed)
        if not isinstance(outcome, str):
            return outcome
        last = outcome
    return last
