"""The ConversionReview core: what is a review, and what every review gets back."""

from __future__ import annotations

import json
from typing import Any

import pytest

from autoscaler.apis.conversion.review import (
    MAX_MESSAGE_CHARS,
    MAX_PAYLOAD_BYTES,
    ConversionRequest,
    ReviewError,
    answer,
    failure,
    parse_review,
)
from tests.unit.apis.conversion_cases import NODECLASS_V1BETA1, NODEPOOL_V1BETA1, changed


def review(**request: Any) -> str:
    body = {"uid": "705ab4f5-6393-11e8-b7cc-42010a800002", "desiredAPIVersion": "karpenter.sh/v1", "objects": []}
    return json.dumps(
        {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "request": {**body, **request}}
    )


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        ("{", 400, "body is not JSON"),
        (b"\xff\xfe", 400, "body is not JSON"),
        ("[]", 400, "expected a JSON object"),
        (
            json.dumps({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1"}),
            400,
            "expected kind ConversionReview",
        ),
        (json.dumps({"kind": "ConversionReview", "apiVersion": "apiextensions.k8s.io/v1"}), 400, "no request object"),
        (review(uid=""), 400, "request.uid"),
        (review(desiredAPIVersion=7), 400, "request.desiredAPIVersion"),
        (review(objects={"a": 1}), 400, "request.objects must be a list"),
        ("x" * (MAX_PAYLOAD_BYTES + 1), 413, "exceeds"),
    ],
    ids=[
        "truncated",
        "not utf-8",
        "a list",
        "another kind",
        "no request",
        "no uid",
        "no version",
        "objects",
        "too big",
    ],
)
def test_what_is_not_a_review(body: str | bytes, status: int, words: str) -> None:
    with pytest.raises(ReviewError, match=words) as error:
        parse_review(body)
    assert error.value.status == status


def test_a_review_is_answered_with_its_uid_and_version() -> None:
    request = parse_review(review(objects=[NODEPOOL_V1BETA1]))
    response = answer(request)
    assert response["apiVersion"] == "apiextensions.k8s.io/v1" and response["kind"] == "ConversionReview"
    assert response["response"]["uid"] == "705ab4f5-6393-11e8-b7cc-42010a800002"
    assert response["response"]["result"] == {"status": "Success"}
    assert [o["apiVersion"] for o in response["response"]["convertedObjects"]] == ["karpenter.sh/v1"]
    # a review in the older apiextensions.k8s.io/v1beta1 is answered in kind
    older = json.loads(review(objects=[]))
    older["apiVersion"] = "apiextensions.k8s.io/v1beta1"
    assert answer(parse_review(json.dumps(older)))["apiVersion"] == "apiextensions.k8s.io/v1beta1"


def test_one_bad_object_fails_the_review_and_is_named() -> None:
    bad = changed(NODEPOOL_V1BETA1, metadata__name="broken", spec__disruption={"consolidationPolicy": "WhenEmpty"})
    other_group = NODECLASS_V1BETA1
    request = ConversionRequest("apiextensions.k8s.io/v1", "u", "karpenter.sh/v1", [NODEPOOL_V1BETA1, bad, other_group])
    response = answer(request)["response"]
    assert response["convertedObjects"] == []
    assert response["result"]["status"] == "Failure"
    message = response["result"]["message"]
    assert 'objects[1]: NodePool "broken" (karpenter.sh/v1beta1) is invalid: spec.disruption:' in message
    assert 'objects[2]: EC2NodeClass "default"' in message and "another API group" in message
    assert "objects[0]" not in message


def test_failure_messages_are_bounded() -> None:
    request = ConversionRequest("apiextensions.k8s.io/v1", "u", "karpenter.sh/v1", [])
    message = failure(request, "x" * 10_000)["response"]["result"]["message"]
    assert len(message) == MAX_MESSAGE_CHARS and message.endswith("…")
