"""EC2's allocation strategies and capacity as the embedded world models them (pure: no moto)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from autoscaler_dev.world.ec2_market import (
    CAPACITY_OPTIMIZED_PRIORITIZED,
    LOWEST_PRICE,
    PRICE_CAPACITY_OPTIMIZED,
    PRIORITIZED,
    SCENARIO_CAPACITY,
    UNLIMITED,
    Candidate,
    CapacitySettings,
    Pool,
    PoolRule,
    allocate,
    spot_price,
)

A = Pool("m5.large", "us-west-2a", "on-demand")
B = Pool("m5.large", "us-west-2b", "on-demand")
C = Pool("m5.xlarge", "us-west-2a", "on-demand")


def test_prioritized_fills_by_priority_not_price_and_overrides_without_one_come_last() -> None:
    candidates = [Candidate(0, A, 0.096, 5.0), Candidate(1, C, 0.192, 0.2), Candidate(2, B, 0.05)]
    allocation = allocate(candidates, 12, {A: 10, B: 10, C: 10}, PRIORITIZED)
    assert allocation.launches == [(1, 10), (0, 2)]  # the dearer pool by EC2's price has the best priority


def test_capacity_optimized_prioritized_takes_the_best_priority_among_deep_pools() -> None:
    candidates = [Candidate(0, A, 0.03, 9.0), Candidate(1, B, 0.04, 0.1), Candidate(2, C, 0.01, 0.05)]
    allocation = allocate(candidates, 2, {A: 10, B: 10, C: 1}, CAPACITY_OPTIMIZED_PRIORITIZED)
    assert allocation.launches == [(1, 2)]  # C has the best priority but too little room; B beats A by priority


def test_lowest_price_fills_from_the_cheapest_pool_whatever_the_order_of_overrides() -> None:
    candidates = [Candidate(0, C, 0.192), Candidate(1, A, 0.096), Candidate(2, B, 0.096)]
    allocation = allocate(candidates, 3, {A: 10, B: 10, C: 10}, LOWEST_PRICE)
    assert allocation.launches == [(1, 3)]  # ties in price: the override listed first
    assert allocation.insufficient == []


def test_lowest_price_reports_each_pool_that_ran_short_and_goes_on_to_the_next_cheapest() -> None:
    candidates = [Candidate(0, A, 0.096), Candidate(1, B, 0.096), Candidate(2, C, 0.192)]
    allocation = allocate(candidates, 5, {A: 0, B: 2, C: 10}, LOWEST_PRICE)
    assert allocation.launches == [(1, 2), (2, 3)]
    assert allocation.insufficient == [0, 1]  # A was empty, B gave what it had; C had enough


def test_partial_fulfilment_launches_what_there_is_and_reports_every_pool_short() -> None:
    candidates = [Candidate(0, A, 0.096), Candidate(1, B, 0.096)]
    allocation = allocate(candidates, 5, {A: 1, B: 2}, LOWEST_PRICE)
    assert allocation.launched == 3 and allocation.insufficient == [0, 1]
    spot = [Candidate(0, A, 0.03), Candidate(1, B, 0.04)]
    allocation = allocate(spot, 5, {A: 1, B: 2}, PRICE_CAPACITY_OPTIMIZED)
    assert allocation.launched == 3 and allocation.insufficient == [0, 1]


def test_price_capacity_optimized_prefers_the_deeper_pool_over_a_cheaper_shallow_one() -> None:
    shallow_cheap, deep_dear = Candidate(0, A, 0.030), Candidate(1, B, 0.035)
    allocation = allocate([shallow_cheap, deep_dear], 1, {A: 3, B: 100}, PRICE_CAPACITY_OPTIMIZED)
    assert allocation.launches == [(1, 1)]
    assert allocation.insufficient == []  # the request was met: no pool is reported


def test_price_capacity_optimized_takes_the_cheaper_of_pools_about_as_deep() -> None:
    allocation = allocate(
        [Candidate(0, A, 0.035), Candidate(1, B, 0.030)], 4, {A: 100, B: 80}, PRICE_CAPACITY_OPTIMIZED
    )
    assert allocation.launches == [(1, 4)]


def test_price_capacity_optimized_moves_on_when_the_chosen_pool_runs_out() -> None:
    candidates = [Candidate(0, A, 0.030), Candidate(1, B, 0.035), Candidate(2, C, 0.060)]
    allocation = allocate(candidates, 12, {A: 10, B: 10, C: 3}, PRICE_CAPACITY_OPTIMIZED)
    assert allocation.launches == [(0, 10), (1, 2)]
    assert allocation.insufficient == []


def test_overrides_that_name_one_pool_share_what_it_has() -> None:
    twice = [Candidate(0, A, 0.096), Candidate(1, A, 0.096), Candidate(2, C, 0.192)]
    allocation = allocate(twice, 4, {A: 3, C: 5}, LOWEST_PRICE)
    assert allocation.launches == [(0, 3), (2, 1)]
    assert allocation.insufficient == [0, 1]


@given(
    st.lists(st.tuples(st.integers(0, 20), st.floats(0.01, 1.0)), min_size=1, max_size=6),
    st.integers(0, 60),
    st.sampled_from([LOWEST_PRICE, PRICE_CAPACITY_OPTIMIZED]),
)
def test_never_more_than_asked_nor_than_a_pool_holds(pools: list[tuple[int, float]], count: int, strategy: str) -> None:
    keys = [Pool(f"m5.{i}xlarge", "us-west-2a", "spot") for i in range(len(pools))]
    candidates = [Candidate(i, keys[i], price) for i, (_, price) in enumerate(pools)]
    free = {keys[i]: size for i, (size, _) in enumerate(pools)}
    allocation = allocate(candidates, count, free, strategy)
    assert allocation.launched == min(count, sum(free.values()))  # all of it, when the pools hold it
    for index, launched in allocation.launches:
        assert 0 < launched <= free[keys[index]]
    if count > sum(free.values()):
        assert allocation.insufficient  # a fleet that falls short says which pools ran out
    elif strategy == PRICE_CAPACITY_OPTIMIZED:
        assert not allocation.insufficient  # met in full: no pool is reported


def test_pool_sizes_follow_vcpus_rules_and_seed() -> None:
    settings = CapacitySettings(spot_vcpus=640, on_demand_vcpus=1280)
    assert settings.instances(Pool("r5.4xlarge", "us-west-2a", "spot"), 16) == 40
    assert settings.instances(Pool("r5.large", "us-west-2a", "on-demand"), 2) == 640
    assert CapacitySettings().instances(A, 2) == UNLIMITED
    ruled = CapacitySettings(
        spot_vcpus=640, pools=[PoolRule(instance_type="r5.*", zone="us-west-2a", capacity_type="spot", instances=0)]
    )
    assert ruled.instances(Pool("r5.4xlarge", "us-west-2a", "spot"), 16) == 0
    assert ruled.instances(Pool("r5.4xlarge", "us-west-2b", "spot"), 16) == 40
    sizes = {SCENARIO_CAPACITY.instances(Pool("r5.4xlarge", z, "spot"), 16, seed=1) for z in "abc"}
    assert len(sizes) > 1 and all(20 <= s <= 60 for s in sizes)  # varied by pool within +-50%
    assert sizes == {SCENARIO_CAPACITY.instances(Pool("r5.4xlarge", z, "spot"), 16, seed=1) for z in "abc"}


def test_spot_prices_differ_by_zone_and_repeat_for_a_seed() -> None:
    prices = [spot_price(1.008, "r5.4xlarge", f"us-west-2{z}", seed=3) for z in "abc"]
    assert len(set(prices)) == 3
    assert all(0.30 * 1.008 * 0.94 <= p <= 0.45 * 1.008 * 1.06 for p in prices)
    assert prices == [spot_price(1.008, "r5.4xlarge", f"us-west-2{z}", seed=3) for z in "abc"]
    assert prices != [spot_price(1.008, "r5.4xlarge", f"us-west-2{z}", seed=4) for z in "abc"]
