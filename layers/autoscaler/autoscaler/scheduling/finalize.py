"""Turning packed NodeClaims into results: instance type options, final requirements and requests."""

from __future__ import annotations

from autoscaler.apis.v1 import labels as wk
from autoscaler.scheduling.daemons import requests_with, smallest_overhead
from autoscaler.scheduling.nodeclaim import SIMULATION_KEYS, NewClaim, min_values_message
from autoscaler.scheduling.requirements import Requirement, Requirements
from autoscaler.scheduling.result import (
    NewNodeClaim,
    PodError,
    Rejection,
    SchedulingResult,
    nodeclaim_labels,
)


def finalize(
    claims: list[NewClaim], result: SchedulingResult, *, max_instance_types: int, well_known: frozenset[str]
) -> SchedulingResult:
    """Keep each NodeClaim's cheapest instance types (up to ``max_instance_types``), pin the instance type
    and capacity type requirements to them, and add the DaemonSet overhead to the requests. A NodeClaim
    whose cheapest options no longer satisfy minValues is dropped and its pods reported. ``well_known`` are
    the label keys that become NodeClaim labels when a requirement pins them."""
    limit = max_instance_types
    for claim in sorted(claims, key=lambda c: c.sequence):
        template = claim.template
        index = template.index
        options = claim.options(limit)
        chosen = [i for i, _ in options]
        if template.has_min_values and (shortfall := index.min_values_shortfall(claim.requirements, chosen)):
            reason = f"{min_values_message(shortfall)} among the {limit} cheapest instance types"
            for pod in claim.pods:
                result.placements.pop(pod.ref, None)
                result.unschedulable[pod.ref] = PodError((Rejection(template.name, reason),))
            continue
        requirements = Requirements(
            {k: r for k, r in claim.requirements.items() if k not in SIMULATION_KEYS and k != wk.LABEL_HOSTNAME}
        )
        previous = requirements.get(wk.LABEL_INSTANCE_TYPE)
        names = frozenset(index.types[i].name for i in chosen)
        requirements[wk.LABEL_INSTANCE_TYPE] = Requirement(
            wk.LABEL_INSTANCE_TYPE, False, names, min_values=previous.min_values if previous else None
        )
        capacity_types = index.capacity_types(chosen, claim.requirements)
        if capacity_types:
            requirements.add(Requirement(wk.LABEL_CAPACITY_TYPE, False, frozenset(capacity_types)))
        result.new_nodeclaims.append(
            NewNodeClaim(
                nodepool=template.name,
                hostname=claim.hostname,
                requirements=requirements,
                requests=requests_with(claim.requests, smallest_overhead(template.groups, claim.mask)),
                options=[(index.types[i], price) for i, price in options],
                pods=tuple(pod.ref for pod in claim.pods),
                labels=nodeclaim_labels(template.labels, claim.requirements, well_known),
                taints=template.taints,
            )
        )
    return result
