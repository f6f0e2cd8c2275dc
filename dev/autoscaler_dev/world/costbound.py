"""A lower bound on what any fleet holding some pods must cost per hour. Pure.

The pods' CPU and memory requests must fit the fleet's allocatable capacity. Relax "whole nodes, each pod on one
node" to "any fraction of any instance type": the cheapest such mix is a linear programme with two constraints,
whose optimum uses at most two instance types, so trying every type alone and every pair with both constraints
tight finds it exactly. No real placement can cost less; a good one comes close when pods are small against nodes.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from typing import NamedTuple


class Option(NamedTuple):
    """One way to buy capacity: an instance type's allocatable CPU (millicores) and memory (bytes) at a price."""

    cpu: float
    memory: float
    price: float


def lower_bound(cpu: float, memory: float, options: Iterable[Option]) -> float:
    """The least cost per hour of fractional instances that provide ``cpu`` millicores and ``memory`` bytes."""
    usable = _frontier([o for o in options if o.price > 0 and o.cpu > 0 and o.memory > 0])
    if cpu <= 0 and memory <= 0:
        return 0.0
    if not usable:
        return math.inf
    best = min(max(cpu / o.cpu, memory / o.memory) * o.price for o in usable)
    for a, b in itertools.combinations(usable, 2):
        determinant = a.cpu * b.memory - b.cpu * a.memory
        if determinant == 0:
            continue
        x = (cpu * b.memory - b.cpu * memory) / determinant
        y = (a.cpu * memory - cpu * a.memory) / determinant
        if x >= 0 and y >= 0:
            best = min(best, x * a.price + y * b.price)
    return best


def _frontier(options: Sequence[Option]) -> list[Option]:
    """Drop options another beats on both price per millicore and price per byte: they are never in an optimum,
    and fewer options keep the pairwise search small."""
    rates = sorted({(o.price / o.cpu, o.price / o.memory): o for o in options}.items())
    kept = []
    for (cpu_rate, memory_rate), option in rates:
        dominated = any(c <= cpu_rate and m <= memory_rate and (c, m) != (cpu_rate, memory_rate) for (c, m), _ in rates)
        if not dominated:
            kept.append(option)
    return kept
