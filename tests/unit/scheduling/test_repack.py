"""Repacking free pods after packing: the leftover mix no longer pays a large memory-optimized type."""

from __future__ import annotations

from typing import Any

import pytest

from autoscaler.scheduling import ClusterSnapshot, Scheduler, repack, repack_fill
from tests.unit.scheduling.builders import instance_type, pod, pods, snapshot, solve

# The shape of the packing benchmark's instance 0: CPU-heavy pods are packed first and fill a compute node's
# CPU, leaving its memory idle; the memory-heavy pods left over then paid a memory-optimized 8xlarge.
TYPES = [
    instance_type("c.8xlarge", 32, 64, price=1.088),
    instance_type("r.8xlarge", 32, 256, price=1.808),
    instance_type("c.2xlarge", 8, 16, price=0.272),
    instance_type("m.2xlarge", 8, 32, price=0.308),
    instance_type("r.xlarge", 4, 32, price=0.252),
]


def workload() -> list[dict[str, Any]]:
    return [
        *pods(6, cpu="4", memory="2Gi", labels={"app": "big"}),
        *pods(2, cpu="4", memory="256Mi", labels={"app": "cpu"}),
        *pods(35, cpu="100m", memory="2Gi", labels={"app": "memory"}),
        *pods(38, cpu="250m", memory="128Mi", labels={"app": "small"}),
    ]


def test_free_pods_are_repacked_onto_cheaper_nodes() -> None:
    result = solve(snapshot(instance_types=TYPES), workload())
    assert not result.unschedulable
    chosen = sorted(c.options[0][0].name for c in result.new_nodeclaims)
    assert "r.8xlarge" not in chosen
    # Packing alone gave c.8xlarge + r.8xlarge ($2.896): the memory-heavy pods came after the CPU-heavy ones
    # had filled the first node's CPU. Two c.8xlarge hold everything (45 CPUs, 87.25 GiB against 2 x 31.9
    # CPUs and 2 x 63.75 GiB) when the memory-heavy pods share the CPU-heavy node's memory.
    assert result.cost_per_hour <= 2 * 1.088 + 1e-9


def test_pods_bound_by_anti_affinity_keep_a_node_each() -> None:
    term = {"labelSelector": {"matchLabels": {"app": "solo"}}, "topologyKey": "kubernetes.io/hostname"}
    affinity = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    solos = [pod(cpu="1", memory="1Gi", labels={"app": "solo"}, affinity=affinity) for _ in range(3)]
    result = solve(snapshot(instance_types=TYPES), [*solos, *workload()])
    hosts = [result.placements[r].name for r in result.placements if r.name in {p["metadata"]["name"] for p in solos}]
    assert len(set(hosts)) == 3
    assert "r.8xlarge" not in [c.options[0][0].name for c in result.new_nodeclaims]


def hostname_spread(max_skew: int) -> dict[str, Any]:
    """A DoNotSchedule spread of the ``app: spread`` pods over hostnames."""
    return {
        "maxSkew": max_skew,
        "topologyKey": "kubernetes.io/hostname",
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "spread"}},
    }


def test_a_hostname_spread_opens_no_extra_node() -> None:
    spreaders = [
        pod(cpu="1", labels={"app": "spread"}, topologySpreadConstraints=[hostname_spread(1)]) for _ in range(2)
    ]
    result = solve(snapshot(instance_types=TYPES), [*spreaders, *workload()])  # the validator checks the spread
    assert not result.unschedulable


def test_hostname_spread_pods_move_to_smaller_nodes_within_their_skew() -> None:
    # maxSkew 2 lets packing put two pods per node on the 2xlarge; one per large node costs less.
    types = [instance_type("m.2xlarge", 8, 32, price=0.326), instance_type("r.large", 2, 16, price=0.1008)]
    spreaders = [
        pod(cpu="1500m", memory="8Gi", labels={"app": "spread"}, topologySpreadConstraints=[hostname_spread(2)])
        for _ in range(4)
    ]
    result = solve(snapshot(instance_types=types), spreaders)  # the validator checks the spread
    assert sorted(c.options[0][0].name for c in result.new_nodeclaims) == ["r.large"] * 4


def test_the_greedy_plan_pays_for_a_mix_of_types_where_one_capping_type_cannot(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The packing benchmark's instance 48: 119 free pods of mixed shapes, 26 real types. Every plan capped at
    # one type paid 11 nodes ($3.16, 1.22x the best packing known); opening each node at the type that packs
    # most of what is left per dollar mixes compute and general-purpose types.
    from bench.packing import generate, nodepool, pods_of, validate

    instance = generate(48, 7)
    cluster = ClusterSnapshot(nodepools=[nodepool()], instance_types={"default": list(instance.types)})
    greedy = Scheduler(cluster).solve(pods_of(instance))
    assert not greedy.unschedulable and validate(cluster, pods_of(instance), greedy).ok
    monkeypatch.setattr(repack, "GREEDY_MAX_PODS", 0)
    capped = Scheduler(cluster).solve(pods_of(instance))
    assert greedy.cost_per_hour < 0.92 * capped.cost_per_hour


def test_the_greedy_plan_empties_a_node_into_the_room_the_others_left(monkeypatch: pytest.MonkeyPatch) -> None:
    # The packing benchmark's instance 33: the greedy opens nodes the pods do not need (each keeps some slack);
    # their pods fit in the others' room at their types, and each node saved costs more than the types of the
    # nodes that take its pods in.
    from bench.packing import generate, nodepool, pods_of, validate

    instance = generate(33, 7)
    cluster = ClusterSnapshot(nodepools=[nodepool()], instance_types={"default": list(instance.types)})
    emptied = Scheduler(cluster).solve(pods_of(instance))
    assert not emptied.unschedulable and validate(cluster, pods_of(instance), emptied).ok
    monkeypatch.setattr(repack_fill, "_empty_bins", lambda template, bins, free: None)
    kept = Scheduler(cluster).solve(pods_of(instance))
    assert emptied.cost_per_hour < 0.97 * kept.cost_per_hour  # without, a plan of three large types was cheaper
