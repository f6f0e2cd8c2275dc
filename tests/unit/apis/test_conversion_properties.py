"""Properties of the conversion over generated objects:

- v1beta1 -> v1 -> v1beta1 gives back the original (as stored, i.e. with v0.37's defaults) for every field
  both versions have; "absent" and "empty" are the same, as Go's ``omitempty`` makes them;
- a converted object converts back and forth again without change (v1 -> v1beta1 -> v1 is stable);
- answering a ConversionReview never raises, whatever the objects are.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autoscaler.apis.conversion import SERVED_KINDS, convert
from autoscaler.apis.conversion.review import ConversionRequest, answer
from autoscaler.apis.validation import parse
from tests.unit.apis.v1beta1_strategies import V1BETA1_OBJECTS

PROPERTY = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def without_empty(value: Any) -> Any:
    """Drop empty maps and lists, as Go's omitempty drops them when Karpenter re-serialises an object."""
    if isinstance(value, dict):
        kept = {k: without_empty(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v not in ({}, [])}
    if isinstance(value, list):
        return [without_empty(v) for v in value]
    return value


def versions(document: dict[str, Any]) -> tuple[str, str]:
    group = document["apiVersion"].split("/")[0]
    return f"{group}/v1", f"{group}/v1beta1"


@PROPERTY
@given(V1BETA1_OBJECTS)
def test_v1beta1_round_trip_through_v1_is_lossless(document: dict[str, Any]) -> None:
    stored = parse(document, SERVED_KINDS).to_dict()  # what the API server would hold, defaults applied
    v1, v1beta1 = versions(document)
    there = convert(stored, v1)
    back = convert(there, v1beta1)
    expected = without_empty(stored)
    if stored["kind"] == "NodePool":  # v1 templates have no `resources` (v1beta1 only allowed it empty)
        expected["spec"]["template"]["spec"].pop("resources", None)
    assert without_empty(back) == expected


@PROPERTY
@given(V1BETA1_OBJECTS)
def test_converted_objects_are_stable_through_v1beta1(document: dict[str, Any]) -> None:
    v1, v1beta1 = versions(document)
    once = convert(document, v1)
    assert convert(convert(once, v1beta1), v1) == once


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)
ODD_OBJECTS = st.one_of(
    JSON,
    V1BETA1_OBJECTS.flatmap(
        lambda doc: st.tuples(st.sampled_from(["spec", "metadata", "status", "kind", "apiVersion"]), JSON).map(
            lambda change: {**doc, change[0]: change[1]}
        )
    ),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(ODD_OBJECTS, max_size=3), st.sampled_from(["karpenter.sh/v1", "karpenter.k8s.aws/v1beta1", "x/y"]))
def test_a_review_is_always_answered(objects: list[Any], desired: str) -> None:
    review = answer(ConversionRequest("apiextensions.k8s.io/v1", "uid-1", desired, objects))
    response = review["response"]
    assert response["uid"] == "uid-1"
    if response["result"]["status"] == "Success":
        assert len(response["convertedObjects"]) == len(objects)
    else:
        assert response["result"]["message"].startswith(f"converting to {desired}: objects[")
