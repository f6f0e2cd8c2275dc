"""The exact packing problem behind bench/packing.py, as a mixed-integer linear program (scipy's HiGHS).

Pods come in groups of identical pods (a Deployment's replicas); a group may allow at most ``per_node``
of its pods on one node (hostname anti-affinity: 1; a hostname topology spread: its maxSkew, since a new
node is always a domain with no pod, the minimum is 0). Nodes are chosen from instance types with an
allocatable amount per resource and an hourly price. Minimise the total price of the nodes.

Formulation: J node slots; ``u[j, t]`` = 1 when slot j is a node of type t (at most one type per
slot); ``z[g, j]`` = the pods of group g on slot j. Each slot's requests fit its type's allocatable, every
group is placed, and slots are ordered by price (slot j costs no less than slot j + 1) so that the
solver does not explore the same packing under every permutation of its nodes. J is the most nodes an
optimum can have: at most one node per pod, and no more than ``upper_bound`` (a known solution's cost)
buys at the cheapest price. Types another type beats on every resource and on price are dropped first.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import coo_matrix


@dataclass(frozen=True)
class Group:
    requests: tuple[float, ...]  # per resource, in the units of NodeType.allocatable
    count: int
    per_node: int | None = None


@dataclass(frozen=True)
class NodeType:
    name: str
    allocatable: tuple[float, ...]
    price: float


@dataclass(frozen=True)
class Solution:
    status: str  # "optimal", "time_limit" (objective is the best found, bound the solver's), "infeasible"
    objective: float | None
    bound: float | None
    seconds: float
    nodes: tuple[tuple[str, tuple[int, ...]], ...] = ()  # per node: its type, the pods of each group


def undominated(types: Sequence[NodeType]) -> list[NodeType]:
    """The types no other type matches on every resource at no higher price (the first of equals kept)."""
    kept: list[NodeType] = []
    for index, candidate in enumerate(types):
        beaten = any(
            other.price <= candidate.price
            and all(o >= c for o, c in zip(other.allocatable, candidate.allocatable, strict=True))
            and (other.price < candidate.price or other.allocatable != candidate.allocatable or position < index)
            for position, other in enumerate(types)
            if position != index
        )
        if not beaten:
            kept.append(candidate)
    return kept


def _slots(groups: Sequence[Group], types: Sequence[NodeType], upper_bound: float | None) -> tuple[int, int]:
    """(most, fewest) nodes an optimal packing can have."""
    most = sum(g.count for g in groups)
    if upper_bound is not None:
        most = min(most, math.floor(upper_bound / min(t.price for t in types) + 1e-9))
    fewest = max((math.ceil(g.count / g.per_node) for g in groups if g.per_node), default=1)
    return max(most, fewest), fewest


def solve(
    groups: Sequence[Group], all_types: Sequence[NodeType], *, upper_bound: float | None = None, time_limit: float = 10
) -> Solution:
    start = time.perf_counter()
    types = undominated(all_types)
    slots, fewest = _slots(groups, types, upper_bound)
    n_types, n_groups, n_resources = len(types), len(groups), len(types[0].allocatable)
    n_u = slots * n_types

    def u(j: int, t: int) -> int:
        return j * n_types + t

    def z(g: int, j: int) -> int:
        return n_u + g * slots + j

    n_vars = n_u + n_groups * slots
    prices = np.array([t.price for t in types])
    cost = np.concatenate([np.tile(prices, slots), np.zeros(n_groups * slots)])
    upper = np.ones(n_vars)
    for g, group in enumerate(groups):
        upper[z(g, 0) : z(g, 0) + slots] = min(group.count, group.per_node or group.count)
    entries: list[tuple[int, int, float]] = []  # (row, column, coefficient)
    low: list[float] = []
    high: list[float] = []

    def constraint(terms: list[tuple[int, float]], lower: float, upper_limit: float) -> None:
        entries.extend((len(low), column, value) for column, value in terms)
        low.append(lower)
        high.append(upper_limit)

    for j in range(slots):
        # slots below the fewest nodes any packing needs are used (the price ordering puts them first)
        constraint([(u(j, t), 1) for t in range(n_types)], 1 if j < fewest else -np.inf, 1)
        for r in range(n_resources):
            supply = [(u(j, t), -node_type.allocatable[r]) for t, node_type in enumerate(types)]
            demand = [(z(g, j), group.requests[r]) for g, group in enumerate(groups) if group.requests[r]]
            constraint(supply + demand, -np.inf, 0)
    for g, group in enumerate(groups):
        constraint([(z(g, j), 1) for j in range(slots)], group.count, group.count)
    for j in range(slots - 1):
        ordered = [(u(j, t), prices[t]) for t in range(n_types)] + [(u(j + 1, t), -prices[t]) for t in range(n_types)]
        constraint(ordered, 0, np.inf)
    row_index, column_index, values = zip(*entries, strict=True)
    matrix = coo_matrix((values, (row_index, column_index)), shape=(len(low), n_vars)).tocsr()
    result = milp(
        cost,
        integrality=np.ones(n_vars),
        bounds=Bounds(np.zeros(n_vars), upper),
        constraints=LinearConstraint(matrix, low, high),
        options={"time_limit": time_limit},
    )
    seconds = time.perf_counter() - start
    bound = getattr(result, "mip_dual_bound", None)
    if result.x is None:
        status = "infeasible" if result.status == 2 else "time_limit"
        return Solution(status, None, bound, seconds)
    x = np.rint(result.x).astype(int)
    nodes = tuple(
        (types[t].name, tuple(int(x[z(g, j)]) for g in range(n_groups)))
        for j in range(slots)
        for t in range(n_types)
        if x[u(j, t)]
    )
    status = "optimal" if result.status == 0 else "time_limit"
    return Solution(status, float(result.fun), float(bound) if bound is not None else None, seconds, nodes)
