"""Is a replacement worth it: Karpenter's price rules for consolidating onto one new NodeClaim. Pure.

- Only instance type options cheaper than the candidates together remain; none left means no consolidation.
- A NodeClaim that may be spot or on-demand is pinned to spot: the options were priced as spot, and an
  on-demand fallback could cost more than the node it replaces.
- Spot nodes are replaced by spot only when spot-to-spot consolidation is enabled (Karpenter's feature gate,
  off by default), and then, for one node, only with at least 15 cheaper options, of which the 15 cheapest
  are kept, and not when the node already runs one of them (each would churn towards the cheapest spot pool,
  which is also the most interrupted).
- Several nodes into one: options of a candidate's own type that are not cheaper than it are dropped.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from autoscaler.apis.v1 import labels as wk
from autoscaler.cloudprovider import InstanceType
from autoscaler.controllers.disruption.candidates import Candidate
from autoscaler.scheduling import NewNodeClaim, Requirement, Requirements

MIN_SPOT_TO_SPOT_OPTIONS = 15
SPOT, ON_DEMAND = wk.CAPACITY_TYPE_SPOT, wk.CAPACITY_TYPE_ON_DEMAND


class NotCheaper(Exception):
    """Why the candidates stay: the message is the Unconsolidatable event's."""


def _allowed(requirements: Requirements, key: str) -> frozenset[str] | None:
    requirement = requirements.get(key)
    if requirement is None or requirement.complement:
        return None
    return frozenset(requirement.values)


def _priced(options: Sequence[InstanceType], requirements: Requirements) -> list[tuple[InstanceType, float]]:
    capacity_types = _allowed(requirements, wk.LABEL_CAPACITY_TYPE)
    zones = _allowed(requirements, wk.LABEL_ZONE)
    priced = [(it, it.cheapest_price(capacity_types, zones)) for it in options]
    return sorted(((it, p) for it, p in priced if p != float("inf")), key=lambda o: (o[1], o[0].name))


def _with_options(
    new: NewNodeClaim, options: list[tuple[InstanceType, float]], requirements: Requirements
) -> NewNodeClaim:
    previous = requirements.get(wk.LABEL_INSTANCE_TYPE)
    requirements = Requirements(requirements)
    names = frozenset(it.name for it, _ in options)
    min_values = previous.min_values if previous else None
    requirements[wk.LABEL_INSTANCE_TYPE] = Requirement(wk.LABEL_INSTANCE_TYPE, False, names, min_values=min_values)
    return dataclasses.replace(new, options=options, requirements=requirements)


def cheaper_replacement(new: NewNodeClaim, candidates: Sequence[Candidate], spot_to_spot: bool) -> NewNodeClaim:
    """``new`` narrowed to the options worth launching instead of ``candidates``; raises NotCheaper."""
    unknown = [c.instance_type_name or c.name for c in candidates if c.price is None]
    if unknown:
        raise NotCheaper(f"the price of {', '.join(unknown)} is not known, so no replacement can be proven cheaper")
    price = sum(c.price or 0.0 for c in candidates)
    requirements = Requirements(new.requirements)
    capacity_types = _allowed(requirements, wk.LABEL_CAPACITY_TYPE)
    may_be_spot = capacity_types is None or SPOT in capacity_types
    all_spot = all(c.capacity_type == SPOT for c in candidates)
    if all_spot and may_be_spot:
        if not spot_to_spot:
            raise NotCheaper("SpotToSpotConsolidation is disabled, can't replace a spot node with a spot node")
        requirements.add(Requirement(wk.LABEL_CAPACITY_TYPE, False, frozenset({SPOT})))
    elif capacity_types is None or {SPOT, ON_DEMAND} <= capacity_types:
        requirements.add(Requirement(wk.LABEL_CAPACITY_TYPE, False, frozenset({SPOT})))
    options = [(it, p) for it, p in _priced([it for it, _ in new.options], requirements) if p < price]
    if len(candidates) > 1:
        own = {c.instance_type_name: c.price or 0.0 for c in candidates}
        options = [(it, p) for it, p in options if it.name not in own or p < own[it.name]]
    if not options:
        raise NotCheaper("Can't replace with a cheaper node")
    previous = requirements.get(wk.LABEL_INSTANCE_TYPE)
    if previous is not None and previous.min_values and len(options) < previous.min_values:
        raise NotCheaper(
            f"Filtering by price: minValues of {previous.min_values} instance types, {len(options)} are cheaper"
        )
    if all_spot and may_be_spot and len(candidates) == 1:
        if len(options) < MIN_SPOT_TO_SPOT_OPTIONS:
            raise NotCheaper(
                f"SpotToSpotConsolidation requires {MIN_SPOT_TO_SPOT_OPTIONS} cheaper instance type options than "
                f"the current candidate to consolidate, got {len(options)}"
            )
        keep = max(MIN_SPOT_TO_SPOT_OPTIONS, previous.min_values or 0 if previous else 0)
        options = options[:keep]
        if candidates[0].instance_type_name in {it.name for it, _ in options}:
            raise NotCheaper(f"{candidates[0].instance_type_name} is already among the cheapest spot options")
    return _with_options(new, options, requirements)
