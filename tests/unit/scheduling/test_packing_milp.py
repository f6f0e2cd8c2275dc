"""The MILP bench/packing.py measures the scheduler against finds the optimum: on tiny instances it agrees
with a brute force over every partition of the pods into nodes (each node the cheapest type that holds it)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest

from bench.packing_milp import Group, NodeType, solve, undominated

TYPES = [
    NodeType("small", (2000, 4096, 10), 0.10),
    NodeType("large", (4000, 8192, 20), 0.19),
    NodeType("highmem", (2000, 16384, 10), 0.15),
    NodeType("small-dearer", (2000, 4096, 10), 0.12),
]


def partitions(items: Sequence[int]) -> Iterator[list[list[int]]]:
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for partition in partitions(rest):
        yield [[first], *partition]
        for i in range(len(partition)):
            yield [*partition[:i], [first, *partition[i]], *partition[i + 1 :]]


def brute_force(groups: Sequence[Group], types: Sequence[NodeType]) -> float:
    pods = [g for g, group in enumerate(groups) for _ in range(group.count)]
    best = float("inf")
    for partition in partitions(list(range(len(pods)))):
        cost = 0.0
        for node in partition:
            members = [pods[p] for p in node]
            if any(groups[g].per_node is not None and members.count(g) > (groups[g].per_node or 0) for g in members):
                break
            need = [sum(groups[g].requests[r] for g in members) for r in range(3)]
            fitting = [t.price for t in types if all(a >= n for a, n in zip(t.allocatable, need, strict=True))]
            cost += min(fitting, default=float("inf"))
        else:
            best = min(best, cost)
    return best


@pytest.mark.parametrize(
    "groups",
    [
        [Group((900, 1000, 1), 4), Group((500, 3000, 1), 2)],  # CPU- and memory-heavy pods to mix
        [Group((1500, 1024, 1), 3, per_node=1), Group((250, 6000, 1), 3)],  # anti-affinity: three nodes at least
        [Group((300, 2048, 1), 5, per_node=2), Group((1000, 512, 1), 2)],  # spread, maxSkew 2
    ],
)
def test_milp_matches_brute_force(groups: list[Group]) -> None:
    exact = solve(groups, TYPES, time_limit=20)
    assert exact.status == "optimal"
    assert exact.objective == pytest.approx(brute_force(groups, TYPES))
    placed = [sum(counts[g] for _, counts in exact.nodes) for g in range(len(groups))]
    assert placed == [g.count for g in groups]


def test_upper_bound_from_a_known_packing_keeps_the_optimum() -> None:
    groups = [Group((900, 1000, 1), 4), Group((500, 3000, 1), 2)]
    optimum = brute_force(groups, TYPES)
    assert solve(groups, TYPES, upper_bound=optimum, time_limit=20).objective == pytest.approx(optimum)


def test_dominated_types_are_dropped() -> None:
    assert [t.name for t in undominated(TYPES)] == ["small", "large", "highmem"]
