"""The validator is not a rubber stamp: every kind of violation planted in a valid result is reported."""

from __future__ import annotations

import dataclasses
from typing import Any

from autoscaler.scheduling import Placement, PodError, Rejection, Scheduler, SchedulingResult
from autoscaler_dev.scheduling_validator import validate
from tests.unit.scheduling.builders import HOSTNAME, ZONE, instance_type, node, nodepool, pod, snapshot

APP = {"app": "db"}
ANTI = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": APP}, "topologyKey": HOSTNAME}
        ]
    }
}


def scheduled(cluster: Any, pending: list[dict[str, Any]]) -> SchedulingResult:
    result = Scheduler(cluster).solve(pending)
    assert validate(cluster, pending, result).ok
    return result


def ref(result: SchedulingResult, name: str) -> Any:
    return next(r for r in [*result.placements, *result.unschedulable] if r.name == name)


def errors(cluster: Any, pending: list[dict[str, Any]], result: SchedulingResult, **kwargs: Any) -> str:
    report = validate(cluster, pending, result, **kwargs)
    assert not report.ok
    return "; ".join(report.errors)


def test_anti_affinity_violation_is_caught() -> None:
    cluster = snapshot()
    pending = [pod("db-0", labels=APP, affinity=ANTI), pod("db-1", labels=APP, affinity=ANTI)]
    result = scheduled(cluster, pending)
    result.placements[ref(result, "db-1")] = result.placements[ref(result, "db-0")]
    assert "anti-affinity" in errors(cluster, pending, result)


def test_untolerated_taint_and_overcommit_on_existing_nodes_are_caught() -> None:
    tainted = node("tainted", cpu="2", taints=[{"key": "dedicated", "value": "x", "effect": "NoSchedule"}])
    cluster = snapshot(nodes=[tainted])
    pending = [pod("big", cpu="3")]
    result = scheduled(cluster, pending)
    result.placements[ref(result, "big")] = Placement("node", "tainted")
    report = errors(cluster, pending, result)
    assert "does not tolerate the taints of node tainted" in report and "overcommitted" in report


def test_unaccounted_and_unexplained_pods_are_caught() -> None:
    cluster = snapshot()
    pending = [pod("a"), pod("b")]
    result = scheduled(cluster, pending)
    del result.placements[ref(result, "a")]
    result.unschedulable[ref(result, "b")] = PodError((Rejection(None, " "),))
    report = errors(cluster, pending, result)
    assert "default/a is unaccounted for" in report
    assert "both placed and unschedulable" in report and "without a reason" in report


def test_a_pod_left_out_that_fits_a_fresh_node_is_caught() -> None:
    cluster = snapshot()
    pending = [pod("easy")]
    result = scheduled(cluster, pending)
    easy = ref(result, "easy")
    del result.placements[easy]
    result.new_nodeclaims.clear()
    result.unschedulable[easy] = PodError((Rejection("default", "made up"),))
    assert "left unschedulable but fits a new" in errors(cluster, pending, result)


def test_spread_skew_violation_is_caught() -> None:
    labels = {"app": "web"}
    constraint = {
        "maxSkew": 1,
        "topologyKey": ZONE,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": labels},
    }
    cluster = snapshot()
    pending = [pod(f"web-{i}", labels=labels, cpu="3", topologySpreadConstraints=[constraint]) for i in range(3)]
    result = scheduled(cluster, pending)
    first = result.placements[ref(result, "web-0")]
    for name in ("web-1", "web-2"):
        result.placements[ref(result, name)] = first
    assert "breaks its topology.kubernetes.io/zone spread" in errors(cluster, pending, result)


def test_options_that_are_too_many_unsorted_or_unlaunchable_are_caught() -> None:
    cluster = snapshot()
    pending = [pod("p")]
    result = scheduled(cluster, pending)
    claim = result.new_nodeclaims[0]
    options = list(claim.options)
    result.new_nodeclaims[0] = dataclasses.replace(claim, options=list(reversed(options)))
    report = errors(cluster, pending, result, max_instance_types=3)
    assert "more than 3" in report and "out of price order" in report
    foreign = instance_type("x9.huge", 2, 8, zones=("zone-z",))
    result.new_nodeclaims[0] = dataclasses.replace(claim, options=[(foreign, 0.01), *options])
    assert "option x9.huge has no offering its (and its NodePool's) requirements allow" in errors(
        cluster, pending, result
    )


def test_limits_breached_by_a_new_nodeclaim_are_caught() -> None:
    cluster = snapshot(
        [nodepool(limits={"cpu": "4"})],
        instance_types=[instance_type("m5.xlarge", 4, 16), instance_type("m5.2xlarge", 8, 32)],
    )
    pending = [pod("p")]
    result = scheduled(cluster, pending)
    claim = result.new_nodeclaims[0]
    bigger = (instance_type("m5.2xlarge", 8, 32), 0.5)
    result.new_nodeclaims[0] = dataclasses.replace(claim, options=[*claim.options, bigger])
    assert "over its limit" in errors(cluster, pending, result)


def test_a_self_affine_pod_starting_a_domain_it_could_have_joined_is_caught() -> None:
    cache = {"app": "cache"}
    term = {"labelSelector": {"matchLabels": cache}, "topologyKey": ZONE}
    affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    cluster = snapshot(
        nodes=[node("b1", zone="zone-b"), node("c1", zone="zone-c")],
        bound_pods=[pod("cache-0", labels=cache, affinity=affinity, node_name="b1")],
    )
    pinned = pod("cache-c", labels=cache, affinity=affinity, nodeSelector={ZONE: "zone-c"})
    free = pod("cache-any", labels=cache, affinity=affinity)
    result = scheduled(cluster, [pinned, free])  # the pinned pod may start zone-c: no cache pod is where it may go
    assert result.placements[ref(result, "cache-c")] == Placement("node", "c1")
    assert result.placements[ref(result, "cache-any")] == Placement("node", "b1")
    result.placements[ref(result, "cache-any")] = Placement("node", "c1")
    result.placements = dict(sorted(result.placements.items(), key=lambda item: item[0].name != "cache-any"))
    assert "is not in a topology.kubernetes.io/zone domain with a pod its affinity requires" in errors(
        cluster, [pinned, free], result
    )
