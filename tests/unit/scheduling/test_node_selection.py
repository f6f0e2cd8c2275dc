"""Node selection: selectors, node affinity, taints and tolerations, and preference relaxation."""

from __future__ import annotations

from typing import Any

from tests.unit.scheduling.builders import (
    CAPACITY_TYPE,
    INSTANCE_TYPE,
    ZONE,
    claim_of,
    error_of,
    nodepool,
    pod,
    snapshot,
    solve,
    zone_of,
)

ARCH = "kubernetes.io/arch"


def required(*terms: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": t} for t in terms]
            }
        }
    }


def preferred(*weighted: tuple[int, list[dict[str, Any]]]) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": w, "preference": {"matchExpressions": e}} for w, e in weighted
            ]
        }
    }


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": operator, "values": list(values)} if values else {"key": key, "operator": operator}


def instance_types_of(result: Any, name: str) -> set[str]:
    return {o.name for o in claim_of(result, name).instance_types}


def test_node_selector_narrows_zone_arch_and_capacity_type() -> None:
    selected = pod("selected", nodeSelector={ZONE: "zone-b", ARCH: "arm64", CAPACITY_TYPE: "on-demand"})
    result = solve(snapshot(), [selected])
    claim = claim_of(result, "selected")
    assert zone_of(result, "selected") == "zone-b"
    assert instance_types_of(result, "selected") == {"m6g.large", "m6g.xlarge"}
    assert claim.requirements[CAPACITY_TYPE].values == frozenset({"on-demand"})


def test_node_selector_on_a_value_no_pool_offers_is_explained() -> None:
    result = solve(snapshot(), [pod("lost", nodeSelector={ZONE: "zone-z"})])
    assert "no instance type has an available offering" in error_of(result, "lost")
    assert "nodepool 'default'" in error_of(result, "lost")


def test_custom_label_must_be_defined_by_the_pool() -> None:
    pools = [nodepool("team-a", labels={"team": "a"}), nodepool("plain")]
    result = solve(
        snapshot(pools), [pod("team-a-pod", nodeSelector={"team": "a"}), pod("team-b-pod", nodeSelector={"team": "b"})]
    )
    assert claim_of(result, "team-a-pod").nodepool == "team-a"
    assert claim_of(result, "team-a-pod").labels["team"] == "a"
    message = error_of(result, "team-b-pod")
    assert "nodepool 'plain': incompatible requirements, label 'team' does not have known values" in message
    assert "nodepool 'team-a': incompatible requirements, key team" in message


def test_numeric_operators_on_instance_labels() -> None:
    cpu = "karpenter.k8s.aws/instance-cpu"
    big = pod("big-only", affinity=required([expr(cpu, "Gt", "4"), expr(cpu, "Lte", "8")]))
    result = solve(snapshot(), [big])
    assert instance_types_of(result, "big-only") == {"m5.2xlarge", "r5.2xlarge"}


def test_required_terms_are_ored_trying_the_first_first() -> None:
    first = pod("first", affinity=required([expr(ZONE, "In", "zone-c")], [expr(ZONE, "In", "zone-a")]))
    fallback = pod("fallback", affinity=required([expr(ZONE, "In", "zone-x")], [expr(ZONE, "In", "zone-a")]))
    result = solve(snapshot(), [first, fallback])
    assert zone_of(result, "first") == "zone-c"
    assert zone_of(result, "fallback") == "zone-a"
    assert result.placements  # the fallback pod was placed after relaxing its first term


def test_preferred_affinity_is_honoured_when_possible_and_dropped_when_not() -> None:
    likes_b = pod("likes-b", affinity=preferred((10, [expr(ZONE, "In", "zone-b")]), (1, [expr(ZONE, "In", "zone-c")])))
    likes_nothing = pod("likes-nothing", affinity=preferred((5, [expr(ZONE, "In", "zone-q")])))
    result = solve(snapshot(), [likes_b, likes_nothing])
    assert zone_of(result, "likes-b") == "zone-b"
    assert "likes-nothing" in {ref.name for ref in result.placements}


def test_ignoring_preferences_does_not_apply_them() -> None:
    likes_b = pod("likes-b", affinity=preferred((10, [expr(ZONE, "In", "zone-b")])))
    result = solve(snapshot(), [likes_b], respect_preferences=False)
    assert ZONE not in claim_of(result, "likes-b").requirements


def test_taints_must_be_tolerated_by_effect() -> None:
    gpu_pool = nodepool("gpu", taints=[{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}], weight=50)
    pools = [gpu_pool, nodepool("general")]
    tolerant = pod("tolerant", tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}])
    result = solve(snapshot(pools), [tolerant, pod("plain")])
    assert claim_of(result, "tolerant").nodepool == "gpu"  # heavier pool first
    assert claim_of(result, "plain").nodepool == "general"
    only_gpu = solve(snapshot([gpu_pool]), [pod("plain")])
    assert "did not tolerate taint nvidia.com/gpu=true:NoSchedule" in error_of(only_gpu, "plain")


def test_no_execute_taints_need_a_matching_value() -> None:
    pool = nodepool("dedicated", taints=[{"key": "dedicated", "value": "db", "effect": "NoExecute"}])
    wrong = pod("wrong", tolerations=[{"key": "dedicated", "operator": "Equal", "value": "web", "effect": "NoExecute"}])
    right = pod("right", tolerations=[{"key": "dedicated", "operator": "Equal", "value": "db"}])
    result = solve(snapshot([pool]), [wrong, right])
    assert "did not tolerate taint dedicated=db:NoExecute" in error_of(result, "wrong")
    assert claim_of(result, "right").nodepool == "dedicated"


def test_prefer_no_schedule_is_avoided_then_tolerated() -> None:
    soft = nodepool("soft", taints=[{"key": "spot-only", "effect": "PreferNoSchedule"}], weight=10)
    result = solve(snapshot([soft, nodepool("clean")]), [pod("p")])
    assert claim_of(result, "p").nodepool == "clean"  # the tainted pool is tried first but avoided
    alone = solve(snapshot([soft]), [pod("p2")])
    assert claim_of(alone, "p2").nodepool == "soft"  # relaxation tolerated it when nothing else would do


def test_startup_taints_do_not_block_pods() -> None:
    pool = nodepool("cilium", startup_taints=[{"key": "node.cilium.io/agent-not-ready", "effect": "NoExecute"}])
    result = solve(snapshot([pool]), [pod("app")])
    assert claim_of(result, "app").nodepool == "cilium"


def test_instance_type_selector_with_beta_key() -> None:
    beta = pod("beta", nodeSelector={"beta.kubernetes.io/instance-type": "c5.xlarge"})
    result = solve(snapshot(), [beta])
    assert instance_types_of(result, "beta") == {"c5.xlarge"}
    assert claim_of(result, "beta").requirements[INSTANCE_TYPE].values == frozenset({"c5.xlarge"})


def test_relaxation_order_follows_karpenter() -> None:
    """Required OR terms go first, preferred node affinity only after: the pod keeps its preference for
    zone-c while giving up the impossible first required term."""
    impossible_first = pod(
        "ordered",
        affinity={
            **required([expr(ZONE, "In", "zone-x")], [expr(ZONE, "In", "zone-b", "zone-c")]),
            "nodeAffinity": {
                **required([expr(ZONE, "In", "zone-x")], [expr(ZONE, "In", "zone-b", "zone-c")])["nodeAffinity"],
                **preferred((1, [expr(ZONE, "In", "zone-c")]))["nodeAffinity"],
            },
        },
    )
    result = solve(snapshot(), [impossible_first])
    assert zone_of(result, "ordered") == "zone-c"
