"""Packing: existing capacity first, NodePool order and limits, DaemonSet overhead, instance type options."""

from __future__ import annotations

from typing import Any

from autoscaler.cloudprovider import OfferingKey
from tests.unit.scheduling.builders import (
    CAPACITY_TYPE,
    INSTANCE_TYPE,
    ZONE,
    catalog,
    claim_of,
    error_of,
    inflight_nodeclaim,
    instance_type,
    node,
    nodepool,
    pod,
    pods,
    snapshot,
    solve,
)


def daemonset(name: str, cpu: str, memory: str = "100Mi", **spec: Any) -> dict[str, Any]:
    container = {"name": "d", "resources": {"requests": {"cpu": cpu, "memory": memory}}}
    return {
        "metadata": {"name": name, "namespace": "kube-system"},
        "spec": {"template": {"metadata": {"labels": {"ds": name}}, "spec": {"containers": [container], **spec}}},
    }


def test_existing_nodes_are_used_before_new_ones() -> None:
    cluster = snapshot(nodes=[node("n1", cpu="4", memory="16Gi")], bound_pods=[pod("busy", cpu="2", node_name="n1")])
    result = solve(cluster, [pod("fits", cpu="1"), pod("too-big", cpu="3")])
    assert result.placements[next(r for r in result.placements if r.name == "fits")].name == "n1"
    assert claim_of(result, "too-big").nodepool == "default"
    assert len(result.new_nodeclaims) == 1


def test_initialized_nodes_are_preferred_over_uninitialized_ones() -> None:
    cluster = snapshot(
        nodes=[
            node("a-starting", nodepool_name="default", initialized=False),
            node("b-ready", nodepool_name="default"),
        ]
    )
    result = solve(cluster, [pod("p", cpu="1")])
    assert next(iter(result.placements.values())).name == "b-ready"


def test_in_flight_nodeclaims_take_pods_before_new_ones() -> None:
    cluster = snapshot(nodeclaims=[inflight_nodeclaim("default-abcde", cpu="4")])
    result = solve(cluster, [pod("a", cpu="1"), pod("b", cpu="2"), pod("c", cpu="2")])
    on_claim = [ref.name for ref, where in result.placements.items() if where.kind == "nodeclaim"]
    assert sorted(on_claim) == ["b", "c"]  # largest first: 2 + 2 CPUs fill it; the third pod needs a new NodeClaim
    assert len(result.new_nodeclaims) == 1


def test_cordoned_and_tainted_nodes_are_skipped() -> None:
    cordoned = node("cordoned")
    cordoned["spec"]["unschedulable"] = True
    tainted = node("tainted", taints=[{"key": "maintenance", "effect": "NoSchedule"}])
    result = solve(snapshot(nodes=[cordoned, tainted]), [pod("p")])
    assert claim_of(result, "p").nodepool == "default"


def test_daemonset_pods_still_to_come_reserve_room_on_existing_nodes() -> None:
    cluster = snapshot(nodes=[node("n1", cpu="2", memory="8Gi")], daemonsets=[daemonset("logs", "1")])
    result = solve(cluster, [pod("p", cpu="1500m")])
    assert claim_of(result, "p").nodepool == "default"  # 2 CPUs minus the 1 the log agent will take


def test_nodepools_by_weight_then_reverse_name() -> None:
    pools = [nodepool("alpha"), nodepool("beta"), nodepool("heavy", weight=10)]
    assert claim_of(solve(snapshot(pools), [pod("p")]), "p").nodepool == "heavy"
    unweighted = [nodepool("alpha"), nodepool("beta")]
    assert claim_of(solve(snapshot(unweighted), [pod("q")]), "q").nodepool == "beta"


def test_limits_hold_across_the_batch_and_spill_to_the_next_pool() -> None:
    limited = nodepool("limited", weight=10, limits={"cpu": "8"})
    small = [instance_type("c5.xlarge", 4, 8), instance_type("c5.2xlarge", 8, 16)]
    cluster = snapshot([limited, nodepool("spill")], {"limited": small, "spill": catalog()})
    batch = [pod(f"p{i}", cpu="3500m", memory="1Gi", affinity=_anti_host("spread")) for i in range(3)]
    result = solve(cluster, batch)
    pools = sorted(claim_of(result, f"p{i}").nodepool for i in range(3))
    assert pools == ["limited", "limited", "spill"]  # two 4-CPU nodes fill the limit of 8


def test_limits_reached_are_explained() -> None:
    full = nodepool("full", limits={"cpu": "4"})
    cluster = snapshot(
        [full], nodes=[node("n1", cpu="4", nodepool_name="full")], bound_pods=[pod("x", cpu="3500m", node_name="n1")]
    )
    result = solve(cluster, [pod("p", cpu="1")])
    assert "nodepool 'full': limits reached (cpu 0 left)" in error_of(result, "p")
    nodes_limited = nodepool("few", limits={"nodes": "1"})
    cluster = snapshot([nodes_limited], nodes=[node("n2", cpu="1", nodepool_name="few")])
    assert "node limit reached" in error_of(solve(cluster, [pod("q", cpu="2")]), "q")


def test_daemonset_overhead_differs_per_instance_type() -> None:
    gpu = instance_type(
        "g5.xlarge", 4, 16, extra={"nvidia.com/gpu": 1}, labels={"karpenter.k8s.aws/instance-gpu-count": "1"}
    )
    plain = instance_type("m5.xlarge", 4, 16)
    gpu_daemon = daemonset(
        "dcgm",
        "3",
        affinity={
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Exists"}]}
                    ]
                }
            }
        },
    )
    cluster = snapshot(instance_types=[gpu, plain], daemonsets=[gpu_daemon, daemonset("logs", "100m")])
    result = solve(cluster, [pod("p", cpu="1")])
    claim = claim_of(result, "p")
    assert [o.name for o in claim.instance_types] == ["m5.xlarge"]  # the GPU type loses 3 CPUs to its daemon
    assert claim.requests["cpu"] == 1100  # the pod plus the smallest overhead among the options


def test_instance_type_options_are_the_cheapest_that_fit() -> None:
    types = [instance_type(f"t{i}.x", 2 + i, 8 + i) for i in range(10)]
    result = solve(snapshot(instance_types=types), [pod("p", cpu="3")], max_instance_types=4)
    claim = claim_of(result, "p")
    assert [o.name for o in claim.instance_types] == ["t2.x", "t3.x", "t4.x", "t5.x"]
    assert claim.requirements[INSTANCE_TYPE].values == frozenset({"t2.x", "t3.x", "t4.x", "t5.x"})
    assert claim.instance_types[0].price == claim.cheapest_price
    assert claim.requirements[CAPACITY_TYPE].values == frozenset({"spot", "on-demand"})


def test_min_values_keep_enough_flexibility_or_explain() -> None:
    flexible = nodepool(
        requirements=[{"key": "karpenter.k8s.aws/instance-family", "operator": "Exists", "minValues": 3}]
    )
    result = solve(snapshot([flexible]), [pod("p", cpu="1")])
    families = {
        o.instance_type.labels["karpenter.k8s.aws/instance-family"] for o in claim_of(result, "p").instance_types
    }
    assert len(families) >= 3
    truncated = solve(snapshot([flexible]), [pod("q", cpu="1")], max_instance_types=2)
    assert "minValues not met" in error_of(truncated, "q") and "2 cheapest" in error_of(truncated, "q")
    too_big = solve(snapshot([flexible]), [pod("r", cpu="12")])
    assert "karpenter.k8s.aws/instance-family has 2 of the 3 values minValues requires" in error_of(too_big, "r")


def test_unavailable_offerings_are_not_chosen() -> None:
    only = [instance_type("m5.large", 2, 8, zones=("zone-a",))]
    gone = frozenset({OfferingKey("m5.large", "zone-a", "spot")})
    result = solve(snapshot(instance_types=only, unavailable_offerings=gone), [pod("p")])
    claim = claim_of(result, "p")
    assert claim.requirements[CAPACITY_TYPE].values == frozenset({"on-demand"})
    all_gone = gone | {OfferingKey("m5.large", "zone-a", "on-demand")}
    result = solve(snapshot(instance_types=only, unavailable_offerings=all_gone), [pod("q")])
    assert "no instance type has an available offering" in error_of(result, "q")


def test_host_ports_never_share_a_node() -> None:
    def web(name: str) -> dict[str, Any]:
        p = pod(name, cpu="100m")
        p["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 8080}]
        return p

    result = solve(snapshot(), [web("w1"), web("w2")])
    assert claim_of(result, "w1").hostname != claim_of(result, "w2").hostname


def test_pods_share_new_nodes_and_the_cheapest_type_holds_them() -> None:
    result = solve(snapshot(), pods(6, cpu="500m", memory="1Gi"))
    assert len(result.new_nodeclaims) == 1
    claim = result.new_nodeclaims[0]
    assert claim.requests["cpu"] == 3000 and claim.requests["pods"] == 6
    cheapest = claim.instance_types[0].instance_type
    assert cheapest.allocatable["cpu"] >= 3000


def test_consolidation_simulation_moves_pods_of_a_candidate() -> None:
    candidate_pods = [pod(f"c{i}", cpu="1", node_name="candidate") for i in range(2)]
    cluster = snapshot(
        nodes=[node("candidate", cpu="4"), node("keeper", cpu="8", zone="zone-b")],
        bound_pods=[*candidate_pods, pod("k", cpu="4", node_name="keeper")],
    )
    result = solve(cluster, candidate_pods, excluded_nodes=["candidate"], max_new_nodeclaims=0)
    assert {where.name for where in result.placements.values()} == {"keeper"}
    crowded = solve(cluster, [*candidate_pods, pod("big", cpu="6")], excluded_nodes=["candidate"], max_new_nodeclaims=0)
    assert "at most 0 new NodeClaim(s)" in error_of(crowded, "big")


def test_unreadable_inputs_are_skipped_and_reported() -> None:
    broken_node = {"metadata": {"name": "broken"}, "status": {"allocatable": {"cpu": "lots"}}}
    broken_daemonset = daemonset("bad", "x")
    result = solve(snapshot(nodes=[broken_node], daemonsets=[broken_daemonset]), [pod("p")])
    assert any("broken" in s for s in result.skipped) and any("bad" in s for s in result.skipped)
    assert claim_of(result, "p").nodepool == "default"


def test_pool_without_usable_instance_types_is_named_in_the_reason() -> None:
    impossible = nodepool("impossible", requirements=[{"key": ZONE, "operator": "In", "values": ["zone-q"]}])
    result = solve(snapshot([impossible]), [pod("p")])
    assert "nodepool 'impossible': no instance type to launch: no instance type has an available offering" in error_of(
        result, "p"
    )


def _anti_host(app: str) -> dict[str, Any]:
    term = {"labelSelector": {"matchLabels": {"anti": app}}, "topologyKey": "kubernetes.io/hostname"}
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


def test_daemonset_matching_a_later_affinity_term_is_expected_on_existing_nodes() -> None:
    terms = [
        {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["zone-x"]}]},
        {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["zone-a"]}]},
    ]
    agent = daemonset(
        "agent",
        "1",
        affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}},
    )
    cluster = snapshot(nodes=[node("n1", cpu="2", zone="zone-a")], daemonsets=[agent])
    result = solve(cluster, [pod("p", cpu="1500m")])
    assert claim_of(result, "p").nodepool == "default"  # n1 keeps a CPU for the agent


def test_result_speaks_the_api_for_creating_nodeclaims() -> None:
    team = nodepool(
        labels={"team": "a"},
        requirements=[{"key": "tier", "operator": "In", "values": ["gold"]}],
        taints=[{"key": "team", "value": "a", "effect": "NoSchedule"}],
    )
    tolerant = [{"key": "team", "operator": "Exists"}]
    cluster = snapshot([team], nodes=[node("n1", cpu="2", labels={"team": "a", "tier": "gold"})])
    result = solve(cluster, [pod("small", cpu="1", tolerations=tolerant), pod("big", cpu="3", tolerations=tolerant)])
    assert result.existing_placements == {"n1": [next(r for r in result.placements if r.name == "small")]}
    claim = claim_of(result, "big")
    assert claim.resource_requests() == {"cpu": "3", "memory": "1Gi", "pods": "1"}
    assert claim.labels["tier"] == "gold" and claim.labels["team"] == "a"  # custom requirement resolved
    assert claim.taints == (("team", "a", "NoSchedule"),)
    selector = {r["key"]: r for r in claim.node_selector_requirements()}
    assert "kubernetes.io/hostname" not in selector and "karpenter.sh/registered" not in selector
    assert selector["node.kubernetes.io/instance-type"]["values"] == sorted(o.name for o in claim.instance_types)
