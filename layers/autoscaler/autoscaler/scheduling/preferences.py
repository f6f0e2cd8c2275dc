"""Preference relaxation, one step at a time, in Karpenter's order.

Karpenter first treats a pod's preferences as requirements. When the pod fits nowhere it relaxes
one thing and tries again: drop the first of several required node-affinity terms (they are OR'd),
then the heaviest preferred pod affinity term, then the heaviest preferred pod anti-affinity term,
then the heaviest preferred node affinity term, then a ScheduleAnyway topology spread, and finally,
only when some NodePool has a PreferNoSchedule taint, tolerate PreferNoSchedule taints.
"""

from __future__ import annotations

from collections.abc import Callable

from autoscaler.scheduling.constraints import SCHEDULE_ANYWAY, PodConstraints
from autoscaler.scheduling.taints import TOLERATE_PREFER_NO_SCHEDULE

Relaxation = Callable[[PodConstraints], PodConstraints | None]


def drop_required_node_affinity_term(c: PodConstraints) -> PodConstraints | None:
    if len(c.required_terms) <= 1:  # the last term is a requirement, never relaxed
        return None
    return c.replace(f"required node affinity term {c.required_terms[0]!r}", required_terms=c.required_terms[1:])


def drop_preferred_pod_affinity_term(c: PodConstraints) -> PodConstraints | None:
    if not c.preferred_affinity:
        return None
    term = c.preferred_affinity[0]
    return c.replace(
        f"preferred pod affinity on {term.topology_key} (weight {term.weight})",
        preferred_affinity=c.preferred_affinity[1:],
    )


def drop_preferred_pod_anti_affinity_term(c: PodConstraints) -> PodConstraints | None:
    if not c.preferred_anti_affinity:
        return None
    term = c.preferred_anti_affinity[0]
    return c.replace(
        f"preferred pod anti-affinity on {term.topology_key} (weight {term.weight})",
        preferred_anti_affinity=c.preferred_anti_affinity[1:],
    )


def drop_preferred_node_affinity_term(c: PodConstraints) -> PodConstraints | None:
    if not c.preferred_terms:
        return None
    term = c.preferred_terms[0]
    return c.replace(
        f"preferred node affinity {term.requirements!r} (weight {term.weight})", preferred_terms=c.preferred_terms[1:]
    )


def drop_schedule_anyway_spread(c: PodConstraints) -> PodConstraints | None:
    for index, spread in enumerate(c.spreads):
        if spread.when_unsatisfiable == SCHEDULE_ANYWAY:
            return c.replace(
                f"ScheduleAnyway topology spread on {spread.topology_key}",
                spreads=c.spreads[:index] + c.spreads[index + 1 :],
            )
    return None


def tolerate_prefer_no_schedule(c: PodConstraints) -> PodConstraints | None:
    if TOLERATE_PREFER_NO_SCHEDULE in c.tolerations:
        return None
    return c.replace(
        "toleration for PreferNoSchedule taints", tolerations=(*c.tolerations, TOLERATE_PREFER_NO_SCHEDULE)
    )


RELAXATIONS: tuple[Relaxation, ...] = (
    drop_required_node_affinity_term,
    drop_preferred_pod_affinity_term,
    drop_preferred_pod_anti_affinity_term,
    drop_preferred_node_affinity_term,
    drop_schedule_anyway_spread,
)


class Preferences:
    """Relaxes constraints; tolerating PreferNoSchedule is offered only when a NodePool has such a taint."""

    def __init__(self, prefer_no_schedule_taints: bool) -> None:
        self._steps = (*RELAXATIONS, tolerate_prefer_no_schedule) if prefer_no_schedule_taints else RELAXATIONS
        self._next: dict[PodConstraints, PodConstraints | None] = {}  # constraints hash by identity

    def relax(self, constraints: PodConstraints) -> PodConstraints | None:
        """The constraints with one more preference relaxed, or None when nothing is left to relax.
        Memoised, so that identical pods relax to identical (shared) constraints."""
        if constraints in self._next:
            return self._next[constraints]
        result: PodConstraints | None = None
        for step in self._steps:
            result = step(constraints)
            if result is not None:
                break
        self._next[constraints] = result
        return result
