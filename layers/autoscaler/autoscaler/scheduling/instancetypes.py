"""The instance types a NodePool allows, indexed so that filtering them costs a few integer operations.

A set of instance types is an ``int`` bitmask over the NodePool's list (bit ``i`` is type ``i``):
intersecting requirements, resource fits and available offerings are ``&`` of masks looked up by
label value, by sorted resource thresholds and by offering, instead of a loop over every type for
every pod. Masks for a requirement are cached, and requirements are interned, so each distinct
requirement is resolved against the types once per scheduling pass.
"""

from __future__ import annotations

import itertools
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator, Mapping, Sequence

from autoscaler.apis.resources import Resources
from autoscaler.apis.v1 import labels as wk
from autoscaler.cloudprovider import InstanceType, OfferingKey
from autoscaler.scheduling.requirements import Requirement, is_negative

# Labels every instance type has a value for, or lacks meaningfully (a type without a GPU has no GPU name).
INTRINSIC_LABELS = frozenset(
    {wk.LABEL_INSTANCE_TYPE, wk.LABEL_ARCH, wk.LABEL_OS, wk.LABEL_WINDOWS_BUILD, *wk.AWS_INSTANCE_LABELS}
)
# Labels a node gets from the offering it launches with rather than from its instance type.
OFFERING_LABELS = (wk.LABEL_ZONE, wk.LABEL_CAPACITY_TYPE, wk.LABEL_ZONE_ID)
OfferingLabels = tuple[str, str, str]  # zone, capacity type, zone id ("" when unknown)


def bits(mask: int) -> Iterator[int]:
    """Indices of the set bits, lowest first."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


class Thresholds:
    """One resource over all types: masks of the types with at least / at most a given amount."""

    def __init__(self, amounts: Sequence[int]) -> None:
        self.values = sorted(set(amounts))
        exactly = [0] * len(self.values)
        for index, amount in enumerate(amounts):
            exactly[bisect_left(self.values, amount)] |= 1 << index
        at_least, at_most = list(exactly), list(exactly)
        for j in range(len(exactly) - 2, -1, -1):
            at_least[j] |= at_least[j + 1]
        for j in range(1, len(exactly)):
            at_most[j] |= at_most[j - 1]
        self._at_least, self._at_most, self._exactly = at_least, at_most, exactly

    def at_least(self, amount: int) -> int:
        position = bisect_left(self.values, amount)
        return self._at_least[position] if position < len(self.values) else 0

    def at_most(self, amount: int) -> int:
        position = bisect_right(self.values, amount)
        return self._at_most[position - 1] if position else 0

    def largest(self, mask: int) -> int:
        """The largest amount among the types in ``mask`` (0 if none)."""
        for j in range(len(self.values) - 1, -1, -1):
            if self._exactly[j] & mask:
                return self.values[j]
        return 0


class InstanceTypeIndex:
    """Instance types of one NodePool, with the offerings currently marked unavailable left out."""

    def __init__(self, instance_types: Sequence[InstanceType], unavailable: frozenset[OfferingKey] = frozenset()):
        self.types = tuple(instance_types)
        self.all = (1 << len(self.types)) - 1
        self.allocatable: tuple[Resources, ...] = tuple(it.allocatable for it in self.types)
        self.label_keys = INTRINSIC_LABELS | {k for it in self.types for k in it.labels}
        self._values: dict[str, dict[str, int]] = {key: {} for key in self.label_keys}
        for index, it in enumerate(self.types):
            for key, value in it.labels.items():
                by_value = self._values[key]
                by_value[value] = by_value.get(value, 0) | 1 << index
        self._has_key = {key: _union(by_value.values()) for key, by_value in self._values.items()}
        # Available offerings: which types offer each (zone, capacity type, zone id), and at what price.
        self._offerings: dict[OfferingLabels, int] = {}
        self._prices: list[dict[OfferingLabels, float]] = []
        for index, it in enumerate(self.types):
            prices: dict[OfferingLabels, float] = {}
            for offering in it.offerings:
                if not offering.available or OfferingKey(it.name, offering.zone, offering.capacity_type) in unavailable:
                    continue
                labels = (offering.zone, offering.capacity_type, offering.zone_id or "")
                prices[labels] = min(offering.price, prices.get(labels, offering.price))
                self._offerings[labels] = self._offerings.get(labels, 0) | 1 << index
            self._prices.append(prices)
        resources = {name for amounts in self.allocatable for name in amounts}
        self._allocatable = {r: Thresholds([a.get(r, 0) for a in self.allocatable]) for r in resources}
        capacities = {name for it in self.types for name in it.capacity}
        self._capacity = {r: Thresholds([it.capacity.get(r, 0) for it in self.types]) for r in capacities}
        self._label_cache: dict[Requirement, int] = {}
        self._offering_cache: dict[tuple[Requirement | None, ...], tuple[int, tuple[OfferingLabels, ...]]] = {}
        self._price_order: dict[tuple[OfferingLabels, ...], list[tuple[float, int]]] = {}
        self._capacity_types: dict[tuple[OfferingLabels, ...], list[frozenset[str]]] = {}

    def domains(self, key: str) -> set[str]:
        """Every value of ``key`` these types can launch with: their labels, or their offerings' zones,
        capacity types and zone ids."""
        if key in OFFERING_LABELS:
            position = OFFERING_LABELS.index(key)
            return {labels[position] for labels in self._offerings if labels[position]}
        return set(self._values.get(key, ()))

    # --- requirements ----------------------------------------------------------------------------
    def label_mask(self, requirement: Requirement) -> int:
        """Types whose own labels allow ``requirement`` (all types when the key is not intrinsic)."""
        cached = self._label_cache.get(requirement)
        if cached is not None:
            return cached
        by_value = self._values.get(requirement.key)
        if by_value is None:
            mask = self.all
        else:
            mask = _union(m for value, m in by_value.items() if requirement.has(value))
            if is_negative(requirement):  # a type without the label satisfies NotIn and DoesNotExist
                mask |= self.all & ~self._has_key[requirement.key]
        self._label_cache[requirement] = mask
        return mask

    def offerings(self, requirements: Mapping[str, Requirement]) -> tuple[int, tuple[OfferingLabels, ...]]:
        """Types with an available offering the requirements allow, and those offerings' labels."""
        get = requirements.get
        key = (get(wk.LABEL_ZONE), get(wk.LABEL_CAPACITY_TYPE), get(wk.LABEL_ZONE_ID))
        cached = self._offering_cache.get(key)
        if cached is None:
            allowed = tuple(labels for labels in self._offerings if _offering_allowed(labels, key))
            cached = self._offering_cache[key] = (_union(self._offerings[labels] for labels in allowed), allowed)
        return cached

    def compatible(self, requirements: Mapping[str, Requirement]) -> int:
        """Types that can satisfy every requirement (labels and an available offering)."""
        mask = self.offerings(requirements)[0]
        for key, requirement in requirements.items():
            if key in self.label_keys:
                mask &= self.label_mask(requirement)
                if not mask:
                    return 0
        return mask

    # --- resources -------------------------------------------------------------------------------
    def fits(self, requests: Mapping[str, int]) -> int:
        """Types whose allocatable holds ``requests``."""
        mask = self.all
        for name, amount in requests.items():
            if amount <= 0:
                continue
            thresholds = self._allocatable.get(name)
            if thresholds is None:
                return 0
            mask &= thresholds.at_least(amount)
            if not mask:
                return 0
        return mask

    def within_capacity(self, limits: Mapping[str, int]) -> int:
        """Types whose capacity is at most ``limits`` for every limited resource (NodePool limits)."""
        mask = self.all
        for name, remaining in limits.items():
            thresholds = self._capacity.get(name)
            if thresholds is not None:
                mask &= thresholds.at_most(remaining)
            elif remaining < 0:
                mask = 0
        return mask

    def largest_capacity(self, mask: int, names: Iterator[str] | Sequence[str]) -> Resources:
        return {name: t.largest(mask) for name in names if (t := self._capacity.get(name)) is not None}

    # --- prices and minValues --------------------------------------------------------------------
    def price_order(self, requirements: Mapping[str, Requirement]) -> list[tuple[float, int]]:
        """Every type with an offering the requirements allow, as (cheapest such price, index), cheapest
        first (ties by index). Computed once per distinct set of allowed offerings."""
        allowed = self.offerings(requirements)[1]
        order = self._price_order.get(allowed)
        if order is None:
            order = []
            for index, prices in enumerate(self._prices):
                candidates = [prices[labels] for labels in allowed if labels in prices]
                if candidates:
                    order.append((min(candidates), index))
            order.sort()
            self._price_order[allowed] = order
        return order

    def cheapest(
        self, mask: int, requirements: Mapping[str, Requirement], limit: int, start: int = 0
    ) -> list[tuple[int, float]]:
        """Up to ``limit`` types of ``mask`` with their cheapest allowed offering price, cheapest first,
        looking from position ``start`` of the price order (when the caller knows none comes earlier)."""
        chosen: list[tuple[int, float]] = []
        for price, index in itertools.islice(self.price_order(requirements), start, None):
            if mask >> index & 1:
                chosen.append((index, price))
                if len(chosen) == limit:
                    break
        return chosen

    def capacity_types(self, indices: Iterable[int], requirements: Mapping[str, Requirement]) -> set[str]:
        """The capacity types the given types can launch as under ``requirements``."""
        allowed = self.offerings(requirements)[1]
        by_type = self._capacity_types.get(allowed)
        if by_type is None:
            by_type = [frozenset(labels[1] for labels in allowed if labels in prices) for prices in self._prices]
            self._capacity_types[allowed] = by_type
        return set().union(*(by_type[i] for i in indices))

    def distinct_values(self, key: str, indices: Sequence[int], requirements: Mapping[str, Requirement]) -> int:
        """How many values of ``key`` the given types offer (minValues counts these)."""
        if key in OFFERING_LABELS:
            position = OFFERING_LABELS.index(key)
            allowed = self.offerings(requirements)[1]
            return len({labels[position] for i in indices for labels in allowed if labels in self._prices[i]})
        return len({self.types[i].labels[key] for i in indices if key in self.types[i].labels})

    def min_values_shortfall(
        self, requirements: Mapping[str, Requirement], indices: Sequence[int]
    ) -> dict[str, tuple[int, int]]:
        """Keys whose minValues the types fail to reach: key -> (values offered, minValues)."""
        shortfall = {}
        for key, requirement in requirements.items():
            if requirement.min_values is not None:
                offered = self.distinct_values(key, indices, requirements)
                if offered < requirement.min_values:
                    shortfall[key] = (offered, requirement.min_values)
        return shortfall


def _union(masks: Iterable[int]) -> int:
    result = 0
    for mask in masks:
        result |= mask
    return result


def _offering_allowed(labels: OfferingLabels, requirements: tuple[Requirement | None, ...]) -> bool:
    for value, requirement in zip(labels, requirements, strict=True):
        if requirement is None:
            continue
        if value:
            if not requirement.has(value):
                return False
        elif not is_negative(requirement):  # an offering without a zone id cannot meet "zone-id In [...]"
            return False
    return True
