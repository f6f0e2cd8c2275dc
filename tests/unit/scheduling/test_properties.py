"""Random clusters and workloads: whatever the mix of constraints, every result passes the independent
validator, which also checks that every pod is placed or explained and none was left out needlessly."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.unit.scheduling.builders import (
    CAPACITY_TYPE,
    HOSTNAME,
    ZONE,
    ZONES,
    catalog,
    node,
    nodepool,
    pod,
    snapshot,
    solve,
)

APPS = ("a", "b", "c")
KEYS = (HOSTNAME, ZONE, CAPACITY_TYPE)


@st.composite
def pools(draw: st.DrawFn) -> list[Any]:
    result = []
    for index in range(draw(st.integers(1, 3))):
        requirements = []
        if draw(st.booleans()):
            zones = draw(st.lists(st.sampled_from(ZONES), min_size=1, max_size=3, unique=True))
            requirements.append({"key": ZONE, "operator": "In", "values": zones})
        if draw(st.booleans()):
            requirements.append(
                {"key": CAPACITY_TYPE, "operator": "In", "values": [draw(st.sampled_from(["spot", "on-demand"]))]}
            )
        taints = [
            {"key": "dedicated", "value": "x", "effect": draw(st.sampled_from(["NoSchedule", "PreferNoSchedule"]))}
        ]
        limits = {"cpu": str(draw(st.integers(4, 64)))} if draw(st.booleans()) else None
        result.append(
            nodepool(
                f"pool-{index}",
                requirements=requirements,
                taints=taints if draw(st.booleans()) else (),
                weight=draw(st.sampled_from([None, 10, 50])),
                limits=limits,
            )
        )
    return result


@st.composite
def workload(draw: st.DrawFn) -> list[dict[str, Any]]:
    result = []
    for index in range(draw(st.integers(1, 18))):
        app = draw(st.sampled_from(APPS))
        spec: dict[str, Any] = {}
        if draw(st.integers(0, 3)) == 0:
            spec["nodeSelector"] = {ZONE: draw(st.sampled_from(ZONES))}
        if draw(st.booleans()):
            spec["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
        kind = draw(st.sampled_from(["none", "anti", "affinity", "spread", "soft"]))
        key = draw(st.sampled_from(KEYS))
        selector = {"matchLabels": {"app": draw(st.sampled_from(APPS))}}
        if kind in ("anti", "affinity"):
            section = "podAntiAffinity" if kind == "anti" else "podAffinity"
            term = {"labelSelector": selector, "topologyKey": key}
            spec["affinity"] = {section: {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
        elif kind in ("spread", "soft"):
            spec["topologySpreadConstraints"] = [
                {
                    "maxSkew": draw(st.integers(1, 2)),
                    "topologyKey": key,
                    "whenUnsatisfiable": "DoNotSchedule" if kind == "spread" else "ScheduleAnyway",
                    "labelSelector": selector,
                }
            ]
        cpu = draw(st.sampled_from(["250m", "500m", "1", "3", "7"]))
        memory = draw(st.sampled_from(["256Mi", "1Gi", "6Gi", "30Gi"]))
        result.append(pod(f"w-{index}", cpu=cpu, memory=memory, labels={"app": app}, **spec))
    return result


@st.composite
def existing(draw: st.DrawFn) -> tuple[list[Any], list[Any]]:
    nodes, bound = [], []
    for index in range(draw(st.integers(0, 3))):
        name = f"n{index}"
        nodes.append(node(name, cpu=str(draw(st.sampled_from([2, 4, 8]))), zone=draw(st.sampled_from(ZONES))))
        for j in range(draw(st.integers(0, 2))):
            bound.append(pod(f"{name}-{j}", cpu="500m", labels={"app": draw(st.sampled_from(APPS))}, node_name=name))
    return nodes, bound


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pools(), workload(), existing(), st.booleans())
def test_random_workloads_are_valid_and_fully_accounted(
    nodepools: list[Any], pending: list[dict[str, Any]], cluster: tuple[list[Any], list[Any]], respect: bool
) -> None:
    nodes, bound = cluster
    result = solve(snapshot(nodepools, catalog(), nodes=nodes, bound_pods=bound), pending, respect_preferences=respect)
    assert len(result.placements) + len(result.unschedulable) == len(pending)
