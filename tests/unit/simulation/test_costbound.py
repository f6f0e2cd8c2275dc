"""The fleet cost lower bound: exact on cases a person can check, never above any real fleet."""

from __future__ import annotations

import itertools
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from autoscaler_dev.world.costbound import Option, lower_bound

GIB = 2**30
CPU_HEAVY = Option(cpu=4000, memory=8 * GIB, price=0.17)  # c-like
MEMORY_HEAVY = Option(cpu=2000, memory=16 * GIB, price=0.126)  # r-like


def test_one_shape_of_pods_costs_its_best_type_fractionally() -> None:
    assert math.isclose(lower_bound(8000, 16 * GIB, [CPU_HEAVY]), 0.34)
    assert math.isclose(lower_bound(8000, 16 * GIB, [CPU_HEAVY, MEMORY_HEAVY]), 0.34)


def test_a_mix_of_shapes_is_cheaper_with_two_types_than_with_either_alone() -> None:
    cpu, memory = 20_000, 100 * GIB
    mixed = lower_bound(cpu, memory, [CPU_HEAVY, MEMORY_HEAVY])
    alone = min(lower_bound(cpu, memory, [CPU_HEAVY]), lower_bound(cpu, memory, [MEMORY_HEAVY]))
    assert mixed < alone
    # both constraints tight: 4000x + 2000y = 20000 and 8x + 16y = 100 GiB -> x = 2.5, y = 5
    assert math.isclose(mixed, 2.5 * 0.17 + 5 * 0.126)


def test_nothing_to_hold_costs_nothing_and_no_option_cannot_hold_anything() -> None:
    assert lower_bound(0, 0, [CPU_HEAVY]) == 0.0
    assert lower_bound(1000, GIB, []) == math.inf


options = st.lists(
    st.builds(
        Option,
        cpu=st.integers(1000, 64_000),
        memory=st.integers(1, 512).map(lambda g: g * GIB),
        price=st.floats(0.01, 10.0),
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(options, st.integers(0, 200_000), st.integers(0, 1000))
def test_no_whole_fleet_of_up_to_three_types_costs_less(choices: list[Option], cpu: int, memory_gib: int) -> None:
    memory = memory_gib * GIB
    bound = lower_bound(cpu, memory, choices)
    for combo in itertools.combinations(choices, min(3, len(choices))):
        for counts in itertools.product(range(8), repeat=len(combo)):
            held_cpu = sum(n * o.cpu for n, o in zip(counts, combo, strict=True))
            held_memory = sum(n * o.memory for n, o in zip(counts, combo, strict=True))
            if held_cpu >= cpu and held_memory >= memory:
                assert sum(n * o.price for n, o in zip(counts, combo, strict=True)) >= bound - 1e-9
