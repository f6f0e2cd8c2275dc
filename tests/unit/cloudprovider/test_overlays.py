"""NodeOverlays on instance types: selection by requirements, price and capacity by weight, conflicts (Karpenter
v1.14.1's nodeoverlay store semantics)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from autoscaler.apis.v1.conditions import get_condition
from autoscaler.apis.v1alpha1 import NodeOverlay
from autoscaler.cloudprovider import InstanceType
from autoscaler.cloudprovider.overlays import adjusted_price, by_weight, evaluate
from tests.unit.scheduling.builders import instance_type, nodepool

NOW = datetime(2026, 12, 2, 18, 0, tzinfo=UTC)
FAMILY = "karpenter.k8s.aws/instance-family"


def overlay(name: str, requirements: list[dict[str, Any]] | None = None, **spec: Any) -> NodeOverlay:
    body = {"requirements": requirements or [], **spec}
    return NodeOverlay.model_validate({"metadata": {"name": name}, "spec": body})


def family(*values: str) -> list[dict[str, Any]]:
    return [{"key": FAMILY, "operator": "In", "values": list(values)}]


def types() -> list[InstanceType]:
    return [
        instance_type("m5.large", 2, 8, price=0.1, zones=("zone-a", "zone-b")),
        instance_type("c5.large", 2, 4, price=0.2, zones=("zone-a", "zone-b")),
    ]


def applied(*overlays: NodeOverlay, pool: Any = None) -> dict[str, InstanceType]:
    pool = pool or nodepool()
    result = evaluate(list(overlays), [(pool, types())])
    return {it.name: it for it in result.apply(pool.name, types())}


def prices(it: InstanceType) -> dict[tuple[str, str], float]:
    return {(o.zone, o.capacity_type): round(o.price, 6) for o in it.offerings}


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ("1.23", 1.23),
        ("+0.5", 1.5),
        ("-0.25", 0.75),
        ("-2", 0.0),
        ("+10%", 1.1),
        ("-10%", 0.9),
        ("-100%", 0.0),
        (None, 1.0),
    ],
)
def test_adjusted_price(change: str | None, expected: float) -> None:
    assert adjusted_price(1.0, change) == pytest.approx(expected)


def test_a_price_adjustment_changes_only_the_selected_types() -> None:
    result = applied(overlay("cheap-c", family("c5"), priceAdjustment="-90%"))
    assert sorted(set(prices(result["c5.large"]).values())) == [0.014, 0.02]
    assert prices(result["m5.large"]) == prices(types()[0])


def test_offering_requirements_select_capacity_type_and_zone() -> None:
    requirements = [
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone-b"]},
    ]
    result = prices(applied(overlay("od-b", requirements, price="5"))["m5.large"])
    assert result[("zone-b", "on-demand")] == 5.0
    assert [p for key, p in result.items() if key != ("zone-b", "on-demand")] == [0.07, 0.1, 0.07]


def test_an_overlay_whose_offering_requirements_match_no_offering_selects_nothing() -> None:
    requirements = [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone-z"]}]
    result = evaluate([overlay("nowhere", requirements, price="5")], [(nodepool(), types())])
    assert result.updates == {} and result.applied == ["nowhere"]


def test_requirements_see_the_nodepool_name_and_template_labels() -> None:
    team = nodepool("team", labels={"team": "a"})
    by_label = overlay("team-a", [{"key": "team", "operator": "In", "values": ["a"]}], price="9")
    by_pool = overlay("pool", [{"key": "karpenter.sh/nodepool", "operator": "In", "values": ["other"]}], price="7")
    result = applied(by_label, by_pool, pool=team)
    assert set(prices(result["m5.large"]).values()) == {9.0}


def test_an_undefined_label_selects_only_with_a_negative_operator() -> None:
    absent = overlay("absent", [{"key": "team", "operator": "In", "values": ["a"]}], price="9")
    negative = overlay("negative", [{"key": "team", "operator": "DoesNotExist"}], price="3")
    result = applied(absent, negative)
    assert set(prices(result["m5.large"]).values()) == {3.0}


def test_the_higher_weight_wins_the_price() -> None:
    low = overlay("a-low", family("m5"), price="1", weight=1)
    high = overlay("z-high", family("m5"), price="2", weight=50)
    assert set(prices(applied(low, high)["m5.large"]).values()) == {2.0}
    assert [o.name for o in by_weight([low, high])] == ["z-high", "a-low"]


def test_equal_weights_conflict_and_the_later_name_is_kept() -> None:
    first = overlay("alpha", family("m5"), price="1", weight=10)
    second = overlay("beta", family("m5", "c5"), price="2", weight=10)
    result = evaluate([first, second], [(nodepool(), types())])
    assert result.applied == ["beta"] and result.conflicts == {"alpha": "conflict with another overlay"}
    overlaid = {it.name: it for it in result.apply("default", types())}
    assert set(prices(overlaid["m5.large"]).values()) == {2.0}


def test_a_conflict_waits_for_the_lowest_weight_seen_on_the_offering() -> None:
    heavy = overlay("heavy", family("m5"), price="5", weight=100)
    middle = overlay("middle", family("m5"), price="1", weight=10)
    another = overlay("another", family("m5"), price="2", weight=10)
    result = evaluate([heavy, middle, another], [(nodepool(), types())])
    assert result.applied == ["heavy", "middle"] and set(result.conflicts) == {"another"}


def test_a_conflicting_overlay_is_applied_in_no_nodepool() -> None:
    pools = [(nodepool("a"), types()), (nodepool("b"), types())]
    only_b = overlay("z-b", [{"key": "karpenter.sh/nodepool", "operator": "In", "values": ["b"]}], price="1")
    both = overlay("a-both", [], capacity={"example.com/dongle": "1"}, price="3")
    result = evaluate([only_b, both], pools)
    assert result.conflicts == {"a-both": "conflict with another overlay"}
    assert "a" not in result.updates


def test_capacity_adds_extended_resources_merged_by_weight() -> None:
    heavy = overlay("heavy", family("m5"), capacity={"example.com/dongle": "2"}, weight=20)
    light = overlay("light", family("m5"), capacity={"example.com/dongle": "9", "example.com/fpga": "1"}, weight=5)
    result = applied(heavy, light)
    assert result["m5.large"].capacity["example.com/dongle"] == 2
    assert result["m5.large"].capacity["example.com/fpga"] == 1
    assert result["m5.large"].allocatable["example.com/fpga"] == 1
    assert "example.com/fpga" not in result["c5.large"].capacity


def test_capacity_conflicts_only_on_a_shared_resource_of_equal_weight() -> None:
    one = overlay("one", [], capacity={"example.com/a": "1"})
    two = overlay("two", [], capacity={"example.com/b": "1"})
    three = overlay("three", [], capacity={"example.com/a": "2"})
    result = evaluate([one, two, three], [(nodepool(), types())])
    assert set(result.conflicts) == {"one"}  # taken last (names descending), it meets "three"'s resource


def test_runtime_invalid_overlays_are_reported_and_skipped() -> None:
    bad = overlay("bad", [{"key": "karpenter.sh/nodepool", "operator": "In", "values": ["-not-a-value-"]}], price="1")
    result = evaluate([bad], [(nodepool(), types())])
    assert set(result.invalid) == {"bad"} and result.updates == {}


def test_conditions_say_ready_or_conflict() -> None:
    first = overlay("alpha", family("m5"), price="1")
    second = overlay("beta", family("m5"), price="2")
    result = evaluate([first, second], [(nodepool(), types())])
    conflicted, kept = result.conditions(first, NOW), result.conditions(second, NOW)
    validation = get_condition(conflicted, "ValidationSucceeded")
    assert validation is not None and (validation.status, validation.reason) == ("False", "Conflict")
    ready = get_condition(conflicted, "Ready")
    assert ready is not None and ready.status == "False"
    ready = get_condition(kept, "Ready")
    assert ready is not None and ready.status == "True"


def test_effects_name_the_overlays_that_changed_a_type() -> None:
    pool = nodepool()
    result = evaluate(
        [overlay("price", family("m5"), price="1"), overlay("dongle", family("m5"), capacity={"example.com/d": "1"})],
        [(pool, types())],
    )
    effects = result.effects("default", "m5.large")
    assert effects is not None and effects.price_sources == ("price",)
    assert effects.capacity_sources == {"example.com/d": "dongle"}
    assert result.effects("default", "c5.large") is None


def test_overlaid_types_are_marked_for_the_launch() -> None:
    result = applied(
        overlay("price", family("m5"), price="0.5"),
        overlay("gpu", family("c5"), capacity={"example.com/dongle": "1"}),
    )
    m5, c5 = result["m5.large"], result["c5.large"]
    assert m5.price_overlaid and all(o.price_overlaid for o in m5.offerings) and not m5.capacity_overlaid
    assert c5.capacity_overlaid and not c5.price_overlaid
    assert not any(it.price_overlaid or it.capacity_overlaid for it in types())  # as offered: unmarked
