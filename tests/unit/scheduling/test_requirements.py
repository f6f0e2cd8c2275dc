"""The requirements algebra: operators, intersection, compatibility, minValues and label normalisation."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from autoscaler.scheduling.requirements import Requirement, RequirementError, Requirements

UNIVERSE = ["1", "2", "3", "5", "8", "a", "b"]


def req(key: str, operator: str, *values: str, min_values: int | None = None) -> Requirement:
    return Requirement.of(key, operator, values, min_values)


def members(requirement: Requirement) -> set[str]:
    return {v for v in UNIVERSE if requirement.has(v)}


def test_each_operator_admits_what_kubernetes_admits() -> None:
    assert members(req("k", "In", "a", "1")) == {"a", "1"}
    assert members(req("k", "NotIn", "a", "1")) == set(UNIVERSE) - {"a", "1"}
    assert members(req("k", "Exists")) == set(UNIVERSE)
    assert members(req("k", "DoesNotExist")) == set()
    assert members(req("k", "Gt", "2")) == {"3", "5", "8"}
    assert members(req("k", "Lt", "3")) == {"1", "2"}
    assert members(req("k", "Gte", "3")) == {"3", "5", "8"}
    assert members(req("k", "Lte", "3")) == {"1", "2", "3"}


def test_bounds_combine_and_collapse_when_empty() -> None:
    window = req("cpu", "Gt", "1").intersection(req("cpu", "Lt", "8"))
    assert members(window) == {"2", "3", "5"}
    assert window.operator == "Exists" and (window.gte, window.lte) == (2, 7)
    assert req("cpu", "Gt", "5").intersection(req("cpu", "Lt", "3")).operator == "DoesNotExist"
    # A bounded set meeting a finite set keeps only the integers within bounds, and drops the bounds.
    finite = req("cpu", "Gte", "3").intersection(req("cpu", "In", "1", "3", "a"))
    assert (finite.operator, finite.values, finite.gte) == ("In", frozenset({"3"}), None)


def test_numeric_operators_need_one_integer() -> None:
    with pytest.raises(RequirementError, match="one integer"):
        req("cpu", "Gt", "four")
    with pytest.raises(RequirementError, match="unknown operator"):
        req("cpu", "Near", "4")


def test_min_values_take_the_larger_and_survive_intersection() -> None:
    merged = req("type", "In", "a", "b", min_values=2).intersection(req("type", "NotIn", "b", min_values=3))
    assert merged.values == frozenset({"a"}) and merged.min_values == 3
    assert merged.to_selector() == [{"key": "type", "operator": "In", "values": ["a"], "minValues": 3}]


def test_beta_labels_are_read_as_stable_ones() -> None:
    requirements = Requirements.from_selector(
        [{"key": "failure-domain.beta.kubernetes.io/zone", "operator": "In", "values": ["z"]}]
    )
    assert list(requirements) == ["topology.kubernetes.io/zone"]
    labels = Requirements.from_labels({"beta.kubernetes.io/arch": "arm64", "kubernetes.io/arch": "arm64"})
    assert labels["kubernetes.io/arch"].values == frozenset({"arm64"})


def test_compatibility_requires_custom_labels_to_be_defined_but_not_well_known_ones() -> None:
    nodepool = Requirements.from_selector([{"key": "team", "operator": "In", "values": ["a", "b"]}])
    well_known = frozenset({"topology.kubernetes.io/zone"})
    assert nodepool.incompatibility(Requirements.from_labels({"team": "a"}), well_known) is None
    assert "team" in str(nodepool.incompatibility(Requirements.from_labels({"team": "c"}), well_known))
    assert nodepool.incompatibility(Requirements.from_labels({"topology.kubernetes.io/zone": "z"}), well_known) is None
    undefined = nodepool.incompatibility(Requirements.from_labels({"gpu": "yes"}), well_known)
    assert undefined == "label 'gpu' does not have known values"
    # Asking for a label to be absent is always possible on a pool that does not set it.
    absent = Requirements.from_selector([{"key": "gpu", "operator": "DoesNotExist"}])
    assert nodepool.incompatibility(absent, well_known) is None


def test_two_negative_requirements_never_conflict() -> None:
    left = Requirements.from_selector([{"key": "k", "operator": "NotIn", "values": ["a"]}])
    right = Requirements.from_selector([{"key": "k", "operator": "DoesNotExist"}])
    assert left.conflict(right) is None
    positive = Requirements.from_selector([{"key": "k", "operator": "In", "values": ["a"]}])
    assert positive.conflict(left) == "k"


def test_selector_round_trip_keeps_both_bounds() -> None:
    bounded = Requirements.from_selector(
        [{"key": "cpu", "operator": "Gte", "values": ["2"]}, {"key": "cpu", "operator": "Lte", "values": ["8"]}]
    )
    again = Requirements.from_selector(bounded.to_selector())
    assert again == bounded and members(again["cpu"]) == {"2", "3", "5", "8"}


_operators = st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"])


@st.composite
def requirements(draw: st.DrawFn) -> Requirement:
    operator = draw(_operators)
    if operator in ("Gt", "Lt", "Gte", "Lte"):
        return req("k", operator, str(draw(st.integers(0, 9))))
    values = draw(st.lists(st.sampled_from(UNIVERSE), max_size=4))
    return req("k", operator, *values)


@given(requirements(), requirements())
def test_intersection_is_set_intersection(left: Requirement, right: Requirement) -> None:
    both = left.intersection(right)
    assert members(both) == members(left) & members(right)
    assert left.has_intersection(right) == bool(members(left) & members(right)) or (
        # complements share values outside any finite universe
        left.complement and right.complement
    )
    assert both == right.intersection(left)
