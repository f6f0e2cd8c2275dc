"""EC2's capacity and spot market as the embedded world models them. Pure: no moto, no boto3.

A *pool* is one instance type in one zone for one capacity type, as in EC2. Each holds a finite number of
instances (``CapacitySettings``); what is live in it is taken from what it holds, so launches deplete a pool and
terminations refill it. Spot prices differ by family (30% to 45% of the shipped on-demand price) and by zone
(within ``ZONE_SPREAD`` of that), deterministically for a seed.

CreateFleet (type instant) fills its target from the fleet's overrides by its allocation strategy (``allocate``):

- ``lowest-price`` (on-demand): cheapest pool first; a pool that runs short gives what it has, is reported as
  ``InsufficientInstanceCapacity`` and the fleet goes on to the next cheapest.
- ``price-capacity-optimized`` (spot): among the pools with the most capacity for the instances still wanted (at
  least half as deep as the deepest, and deep enough for the rest when one is), the cheapest; repeated until the
  target is met. Pools are only reported empty when the target could not be met.
- ``prioritized`` (on-demand) and ``capacity-optimized-prioritized`` (spot), which Karpenter asks for when a
  NodeOverlay priced the NodeClaim's types: as ``lowest-price`` and ``price-capacity-optimized``, but by the
  overrides' ``Priority`` (lower first; none: last) instead of the price.

A scenario sets capacity in its ``capacity`` section (``Scenario.capacity``):

    capacity:
      spotVcpus: 640            # vCPUs a spot pool holds unless a rule says otherwise (its size sets the count)
      onDemandVcpus: 1280
      variation: 0.5            # each pool holds up to 50% more or less than that (seeded)
      pools:                    # the first matching rule sets the instances of a pool; patterns as in fnmatch
        - {instanceType: "r5.*", zone: us-west-2a, capacityType: spot, instances: 0}
"""

from __future__ import annotations

import fnmatch
import hashlib
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

SPOT, ON_DEMAND = "spot", "on-demand"
LOWEST_PRICE, PRICE_CAPACITY_OPTIMIZED = "lowest-price", "price-capacity-optimized"
PRIORITIZED, CAPACITY_OPTIMIZED_PRIORITIZED = "prioritized", "capacity-optimized-prioritized"
ZONE_SPREAD = 0.12  # a spot price is within 12% of its type's price in the other zones
INSUFFICIENT_CAPACITY = "InsufficientInstanceCapacity"
UNLIMITED = 1 << 30


@dataclass(frozen=True, order=True)
class Pool:
    instance_type: str
    zone: str
    capacity_type: str


def _unit(*parts: object) -> float:
    """A number in [0, 1) fixed by ``parts`` (the same on every run and machine)."""
    digest = hashlib.sha256("/".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def spot_price(on_demand: float, instance_type: str, zone: str, seed: int = 0) -> float:
    """The spot price of a type in a zone: a share of its on-demand price per family, varied per zone."""
    family = instance_type.split(".", 1)[0]
    share = 0.30 + 0.15 * (zlib.crc32(family.encode()) % 100) / 100
    zone_factor = 1 - ZONE_SPREAD / 2 + ZONE_SPREAD * _unit(seed, "spot", instance_type, zone)
    return round(on_demand * share * zone_factor, 5)


class PoolRule(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    instance_type: str = Field(default="*", alias="instanceType")
    zone: str = "*"
    capacity_type: Literal["spot", "on-demand", "*"] = Field(default="*", alias="capacityType")
    instances: int = Field(ge=0)

    def matches(self, pool: Pool) -> bool:
        return (
            fnmatch.fnmatchcase(pool.instance_type, self.instance_type)
            and fnmatch.fnmatchcase(pool.zone, self.zone)
            and self.capacity_type in ("*", pool.capacity_type)
        )


class CapacitySettings(BaseModel):
    """How many instances each pool holds. ``None`` vCPUs: unlimited (the default outside scenarios)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    spot_vcpus: int | None = Field(default=None, ge=0, alias="spotVcpus")
    on_demand_vcpus: int | None = Field(default=None, ge=0, alias="onDemandVcpus")
    variation: float = Field(default=0.0, ge=0, lt=1)
    pools: list[PoolRule] = Field(default_factory=list)

    def instances(self, pool: Pool, vcpus: int, seed: int = 0) -> int:
        """What ``pool`` holds when nothing runs in it."""
        rule = next((r for r in self.pools if r.matches(pool)), None)
        if rule is not None:
            return rule.instances
        budget = self.spot_vcpus if pool.capacity_type == SPOT else self.on_demand_vcpus
        if budget is None:
            return UNLIMITED
        factor = 1 - self.variation + 2 * self.variation * _unit(seed, "capacity", pool)
        return max(0, round(budget * factor / max(vcpus, 1)))


# What a scenario's pools hold unless it says otherwise: enough for a few hundred nodes over the catalogue,
# few enough that a scale-out of a thousand pods empties its favourite pools and moves on to others.
SCENARIO_CAPACITY = CapacitySettings(spot_vcpus=640, on_demand_vcpus=1280, variation=0.5)


@dataclass(frozen=True)
class Candidate:
    """One override of a fleet request: its position in the request, its pool and the pool's price."""

    index: int
    pool: Pool
    price: float | None
    priority: float | None = None  # the override's Priority, for the prioritized strategies


@dataclass
class Allocation:
    launches: list[tuple[int, int]] = field(default_factory=list)  # (candidate index, instances)
    insufficient: list[int] = field(default_factory=list)  # candidate indexes whose pool ran short

    @property
    def launched(self) -> int:
        return sum(n for _, n in self.launches)


def allocate(candidates: Sequence[Candidate], count: int, available: Mapping[Pool, int], strategy: str) -> Allocation:
    """Which overrides fill ``count`` instances, given what each pool has free. Several overrides may name one pool
    (two templates, one subnet): they share what it has."""
    free = {c.pool: max(0, available.get(c.pool, 0)) for c in candidates}
    result, remaining = Allocation(), count
    rank = _by_priority if strategy in (PRIORITIZED, CAPACITY_OPTIMIZED_PRIORITIZED) else _by_price
    if strategy in (PRICE_CAPACITY_OPTIMIZED, CAPACITY_OPTIMIZED_PRIORITIZED):
        while remaining > 0:
            open_ = [c for c in candidates if free[c.pool] > 0]
            if not open_:
                break
            deepest = max(free[c.pool] for c in open_)
            threshold = max(deepest / 2, min(remaining, deepest))
            chosen = min((c for c in open_ if free[c.pool] >= threshold), key=rank)
            taken = min(free[chosen.pool], remaining)
            free[chosen.pool] -= taken
            remaining -= taken
            result.launches.append((chosen.index, taken))
        if remaining > 0:
            result.insufficient = [c.index for c in candidates if free[c.pool] == 0]
        return result
    for candidate in sorted(candidates, key=rank):
        if remaining == 0:
            break
        taken = min(free[candidate.pool], remaining)
        if taken:
            free[candidate.pool] -= taken
            remaining -= taken
            result.launches.append((candidate.index, taken))
        if remaining > 0:
            result.insufficient.append(candidate.index)
    return result


def _price(candidate: Candidate) -> float:
    return candidate.price if candidate.price is not None else float("inf")


def _by_price(candidate: Candidate) -> tuple[float, int]:
    return _price(candidate), candidate.index


def _by_priority(candidate: Candidate) -> tuple[float, float, int]:
    priority = candidate.priority if candidate.priority is not None else float("inf")
    return priority, _price(candidate), candidate.index


def insufficient_capacity_message(pool: Pool, other_zones: Sequence[str]) -> str:
    others = ", ".join(z for z in other_zones if z != pool.zone)
    message = (
        f"We currently do not have sufficient {pool.instance_type} capacity in the Availability Zone you requested "
        f"({pool.zone}). Our system will be working on provisioning additional capacity."
    )
    if others:
        message += f" You can currently get {pool.instance_type} capacity by choosing {others}."
    return message
