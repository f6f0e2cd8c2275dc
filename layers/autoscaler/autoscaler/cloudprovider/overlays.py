"""NodeOverlays applied to instance types: what the scheduler and consolidation believe a type costs and holds. Pure.

As Karpenter v1.14.1 (its nodeoverlay controller, instance type store and overlay cloud provider) does it:

- an overlay selects, per NodePool, the instance types whose labels (with the NodePool's name and its template's
  labels) satisfy its requirements, and of those the offerings whose zone and capacity type do; a type none of
  whose offerings match is not selected;
- overlays are taken by weight (unset is 0), the higher first, equal weights in reverse name order; per offering
  the first price (or price adjustment) wins, per extended resource the first capacity wins;
- an overlay that sets the same offering's price, or the same resource of a type, as an overlay of equal weight
  taken before it conflicts: it is applied nowhere (all NodePools or none) and reported;
- ``price`` replaces the offering's price; ``priceAdjustment`` adds an amount (``-0.5``) or a percentage
  (``+10%``), never below zero; ``capacity`` adds extended resources (replacing one the type already reports).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from autoscaler.apis.resources import Resources, parse_resources
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.common import Condition
from autoscaler.apis.v1.conditions import roll_up_ready, set_condition
from autoscaler.apis.v1.nodepool import NodePool
from autoscaler.apis.v1alpha1 import NodeOverlay
from autoscaler.apis.validation import runtime_errors
from autoscaler.cloudprovider.requirements import satisfies
from autoscaler.cloudprovider.types import InstanceType, Offering

VALIDATION_SUCCEEDED = "ValidationSucceeded"  # the one condition Ready rolls up, as Karpenter's
CONFLICT = "Conflict"  # the ValidationSucceeded reasons Karpenter gives
RUNTIME_VALIDATION = "RuntimeValidation"
CONFLICT_MESSAGE = "conflict with another overlay"
OFFERING_KEYS = frozenset({wk.LABEL_ZONE, wk.LABEL_CAPACITY_TYPE, wk.LABEL_ZONE_ID})


def adjusted_price(price: float, change: str | None) -> float:
    """``price`` after an overlay's ``price`` ("1.23": replaced) or ``priceAdjustment`` ("+0.5", "-10%")."""
    if not change:
        return price
    if not change.startswith(("+", "-")):
        return float(change)
    adjusted = price * (1 + float(change[:-1]) / 100) if change.endswith("%") else price + float(change)
    return max(adjusted, 0.0)


def weight_of(overlay: NodeOverlay) -> int:
    return overlay.spec.weight or 0


def by_weight(overlays: Sequence[NodeOverlay]) -> list[NodeOverlay]:
    """Precedence order: higher weight first, equal weights by name, later in the alphabet first."""
    return sorted(overlays, key=lambda o: (weight_of(o), o.name), reverse=True)


def offering_labels(offering: Offering) -> dict[str, str]:
    found = {wk.LABEL_ZONE: offering.zone, wk.LABEL_CAPACITY_TYPE: offering.capacity_type}
    if offering.zone_id:
        found[wk.LABEL_ZONE_ID] = offering.zone_id
    return found


def selected_offerings(overlay: NodeOverlay, nodepool: NodePool, instance_type: InstanceType) -> list[int]:
    """Indices of the offerings of ``instance_type`` (as ``nodepool`` offers it) that ``overlay`` selects."""
    template = nodepool.spec.template.metadata
    labels = {**instance_type.labels, **((template.labels or {}) if template else {})}
    labels[wk.LABEL_NODEPOOL] = nodepool.name
    on_type: list[tuple[str, str, Sequence[str] | None]] = []
    on_offering: list[tuple[str, str, Sequence[str] | None]] = []
    for requirement in overlay.spec.requirements:
        key = wk.normalize_label(requirement.key)
        (on_offering if key in OFFERING_KEYS else on_type).append((key, requirement.operator, requirement.values))
    if not all(satisfies(labels.get(key), op, values) for key, op, values in on_type):
        return []
    return [
        index
        for index, offering in enumerate(instance_type.offerings)
        if all(satisfies(offering_labels(offering).get(key), op, values) for key, op, values in on_offering)
    ]


@dataclass
class _PriceUpdate:
    change: str
    source: str
    lowest_weight: int  # the lowest weight of the overlays that selected the offering so far


@dataclass
class _CapacityUpdate:
    amounts: Resources
    sources: dict[str, str]  # resource -> overlay
    lowest_weight: int
    lowest_resources: frozenset[str]  # what the lowest-weight overlay so far set


@dataclass
class _TypeUpdate:
    prices: dict[int, _PriceUpdate] = field(default_factory=dict)  # offering index -> update
    capacity: _CapacityUpdate | None = None


@dataclass
class AppliedOverlay:
    """What overlays changed on one instance type of one NodePool, for ``autoscaler plan``."""

    price_sources: tuple[str, ...]  # the overlays whose price an offering of the type now has
    capacity_sources: dict[str, str]  # extended resource -> the overlay it came from


@dataclass
class Overlays:
    """Overlays evaluated against NodePools' instance types: the changes to make and each overlay's outcome."""

    updates: dict[str, dict[str, _TypeUpdate]] = field(default_factory=dict)  # nodepool -> type -> update
    applied: list[str] = field(default_factory=list)  # overlays taking effect (in precedence order)
    conflicts: dict[str, str] = field(default_factory=dict)  # overlay -> message
    invalid: dict[str, str] = field(default_factory=dict)  # overlay -> runtime validation problems

    def apply(self, nodepool: str, instance_types: Sequence[InstanceType]) -> list[InstanceType]:
        """``instance_types`` of ``nodepool`` with the overlays' prices and capacity; untouched types as given."""
        updates = self.updates.get(nodepool, {})
        return [_apply(it, updates[it.name]) if it.name in updates else it for it in instance_types]

    def conditions(self, overlay: NodeOverlay, now: datetime) -> list[Condition]:
        """``overlay``'s status conditions after this evaluation (transition times kept where nothing changed)."""
        current = overlay.status.conditions if overlay.status else None
        if overlay.name in self.invalid:
            wanted = set_condition(
                current, VALIDATION_SUCCEEDED, "False", RUNTIME_VALIDATION, self.invalid[overlay.name], now=now
            )
        elif overlay.name in self.conflicts:
            wanted = set_condition(
                current, VALIDATION_SUCCEEDED, "False", CONFLICT, self.conflicts[overlay.name], now=now
            )
        else:
            wanted = set_condition(current, VALIDATION_SUCCEEDED, "True", VALIDATION_SUCCEEDED, "", now=now)
        return roll_up_ready(wanted, (VALIDATION_SUCCEEDED,), now=now)

    def effects(self, nodepool: str, name: str) -> AppliedOverlay | None:
        update = self.updates.get(nodepool, {}).get(name)
        if update is None:
            return None
        prices = tuple(sorted({p.source for p in update.prices.values()}))
        return AppliedOverlay(prices, dict(update.capacity.sources) if update.capacity else {})


def _apply(instance_type: InstanceType, update: _TypeUpdate) -> InstanceType:
    offerings = tuple(
        dataclasses.replace(o, price=adjusted_price(o.price, update.prices[i].change), price_overlaid=True)
        if i in update.prices
        else o
        for i, o in enumerate(instance_type.offerings)
    )
    if update.capacity is None:
        return dataclasses.replace(instance_type, offerings=offerings)
    capacity = {**instance_type.capacity, **update.capacity.amounts}
    return dataclasses.replace(instance_type, offerings=offerings, capacity=capacity, capacity_overlaid=True)


def _conflicts(update: _TypeUpdate, offerings: Sequence[int], overlay: NodeOverlay) -> bool:
    weight = weight_of(overlay)
    spec = overlay.spec
    prices = spec.price is not None or spec.price_adjustment is not None
    if prices and any(i in update.prices and update.prices[i].lowest_weight == weight for i in offerings):
        return True
    current = update.capacity
    return bool(
        spec.capacity and current and current.lowest_weight == weight and current.lowest_resources & set(spec.capacity)
    )


def _record(update: _TypeUpdate, offerings: Sequence[int], overlay: NodeOverlay) -> None:
    weight, spec = weight_of(overlay), overlay.spec
    change = spec.price if spec.price is not None else spec.price_adjustment
    if change is not None:
        for index in offerings:
            if index in update.prices:  # a heavier overlay set it: only the weight seen moves down
                update.prices[index].lowest_weight = weight
            else:
                update.prices[index] = _PriceUpdate(change, overlay.name, weight)
    if spec.capacity:
        amounts = parse_resources(spec.capacity)
        current = update.capacity or _CapacityUpdate({}, {}, weight, frozenset())
        for resource, amount in amounts.items():
            if resource not in current.amounts:
                current.amounts[resource] = amount
                current.sources[resource] = overlay.name
        current.lowest_weight, current.lowest_resources = weight, frozenset(amounts)
        update.capacity = current


def evaluate(overlays: Sequence[NodeOverlay], nodepools: Sequence[tuple[NodePool, Sequence[InstanceType]]]) -> Overlays:
    """Every overlay against every NodePool's instance types (as the cloud offers them, before any overlay)."""
    result = Overlays()
    for overlay in by_weight(overlays):
        if problems := runtime_errors(overlay):
            result.invalid[overlay.name] = "; ".join(p.message for p in problems)
            continue
        selected = [
            (pool.name, it.name, offerings)
            for pool, types in nodepools
            for it in types
            if (offerings := selected_offerings(overlay, pool, it))
        ]
        # Checked everywhere before it is recorded anywhere: a conflicting overlay is applied nowhere.
        if any(_conflicts(result.updates.get(p, {}).get(t, _TypeUpdate()), o, overlay) for p, t, o in selected):
            result.conflicts[overlay.name] = CONFLICT_MESSAGE
            continue
        for pool_name, type_name, offerings in selected:
            _record(result.updates.setdefault(pool_name, {}).setdefault(type_name, _TypeUpdate()), offerings, overlay)
        result.applied.append(overlay.name)
    return result
