"""The conversion function's real handler, invoked with Lambda function URL events as the API server's
webhook calls produce them: reviews in both directions, malformed and oversized requests, invalid objects."""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

import pytest

from autoscaler_dev.harness import Context, load_handler
from tests.support.lambdas import sample_event
from tests.unit.apis.conversion_cases import NODECLAIM_V1BETA1, NODECLASS_V1BETA1, NODEPOOL_V1BETA1, changed

SAMPLE_EVENT = sample_event("conversion-review.json")
HANDLER = load_handler("conversion")


def invoke(
    review_body: str | None = None, *, base64_encoded: bool = False, method: str = "POST", **event: Any
) -> dict[str, Any]:
    request = copy.deepcopy(SAMPLE_EVENT)
    request["requestContext"]["http"]["method"] = method
    if review_body is not None:
        request["body"] = base64.b64encode(review_body.encode()).decode() if base64_encoded else review_body
        request["isBase64Encoded"] = base64_encoded
    request.update(event)
    response: dict[str, Any] = HANDLER.handler(request, Context(function_name="conversion", memory_limit_in_mb=256))
    return response


def review(desired: str, *objects: Any) -> str:
    request = {"uid": "b7f1c2d3", "desiredAPIVersion": desired, "objects": list(objects)}
    return json.dumps({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "request": request})


def answered(response: dict[str, Any]) -> dict[str, Any]:
    assert response["statusCode"] == 200
    assert response["headers"]["Content-Type"] == "application/json"
    result: dict[str, Any] = json.loads(response["body"])["response"]
    return result


def test_the_sample_event_converts_a_v1beta1_nodepool() -> None:
    result = answered(invoke())
    assert result["uid"] == "0a6a2d1e-91c4-4c3e-9f0e-6f1f3c2b8a11"
    assert result["result"] == {"status": "Success"}
    [nodepool] = result["convertedObjects"]
    assert nodepool["apiVersion"] == "karpenter.sh/v1"
    # what the API server checks: identity and server-set metadata unchanged
    original = json.loads(SAMPLE_EVENT["body"])["request"]["objects"][0]["metadata"]
    assert {k: nodepool["metadata"][k] for k in original} == original


@pytest.mark.parametrize("encoded", [False, True], ids=["text", "base64"])
def test_both_directions_for_every_kind(encoded: bool) -> None:
    to_v1 = answered(invoke(review("karpenter.sh/v1", NODEPOOL_V1BETA1, NODECLAIM_V1BETA1), base64_encoded=encoded))
    assert to_v1["result"]["status"] == "Success"
    v1_objects = to_v1["convertedObjects"]
    assert [(o["kind"], o["apiVersion"]) for o in v1_objects] == [
        ("NodePool", "karpenter.sh/v1"),
        ("NodeClaim", "karpenter.sh/v1"),
    ]
    back = answered(invoke(review("karpenter.sh/v1beta1", *v1_objects), base64_encoded=encoded))
    assert back["convertedObjects"] == [NODEPOOL_V1BETA1, NODECLAIM_V1BETA1]
    classes = answered(invoke(review("karpenter.k8s.aws/v1", NODECLASS_V1BETA1), base64_encoded=encoded))
    assert classes["convertedObjects"][0]["spec"]["amiSelectorTerms"] == [{"alias": "al2023@latest"}]
    restored = answered(invoke(review("karpenter.k8s.aws/v1beta1", *classes["convertedObjects"])))
    assert restored["convertedObjects"][0]["spec"]["amiFamily"] == "AL2023"


def test_an_invalid_object_fails_the_review_naming_object_and_field(caplog: pytest.LogCaptureFixture) -> None:
    secret = "s3cr3t-" + "v" * 5000
    bad = changed(NODECLASS_V1BETA1, metadata__name="web", spec__amiFamily="Windows2025", spec__userData=secret)
    result = answered(invoke(review("karpenter.k8s.aws/v1", bad)))
    assert result["convertedObjects"] == []
    assert result["result"]["status"] == "Failure"
    assert (
        'EC2NodeClass "web" (karpenter.k8s.aws/v1beta1) is invalid: spec.amiFamily: Unsupported value'
        in result["result"]["message"]
    )
    # the log says what failed, bounded: nothing the caller sent is echoed whole
    [record] = [r for r in caplog.records if r.getMessage() == "conversion failed"]
    logged = repr(vars(record))
    assert "spec.amiFamily" in logged and secret not in logged and len(logged) < 4000


@pytest.mark.parametrize(
    ("event", "status", "words"),
    [
        ({"body": "{not json"}, 400, "body is not JSON"),
        (
            {"body": json.dumps({"kind": "ConversionReview", "apiVersion": "apiextensions.k8s.io/v1", "request": {}})},
            400,
            "request.uid",
        ),
        ({"body": "%%%", "isBase64Encoded": True}, 400, "not valid base64"),
        ({"body": None}, 400, "body is not JSON"),
        ({"body": "x" * (9 * 1024 * 1024)}, 413, "exceeds the 6291456-byte limit"),
        ({"requestContext": {"http": {"method": "POST"}}}, 400, "not a Lambda function URL request"),
    ],
    ids=["not JSON", "no uid", "bad base64", "no body", "oversized", "not a function URL event"],
)
def test_malformed_requests_get_a_4xx_status(event: dict[str, Any], status: int, words: str) -> None:
    response = invoke(**event)
    assert response["statusCode"] == status
    body = json.loads(response["body"])
    assert (body["kind"], body["status"], body["code"]) == ("Status", "Failure", status)
    assert words in body["message"]


def test_only_post_is_answered() -> None:
    response = invoke(method="GET")
    assert response["statusCode"] == 405
    assert "POST a ConversionReview" in json.loads(response["body"])["message"]


def test_an_answer_too_large_for_lambda_becomes_a_failure() -> None:
    # Quotes double with every JSON encoding: a 2 MiB user data is ~4 MiB in the request and over 6 MiB
    # once the converted objects are encoded into the function URL response.
    big = changed(NODECLASS_V1BETA1, spec__userData='"' * (2 * 1024 * 1024))
    response = invoke(review("karpenter.k8s.aws/v1", big))
    assert len(json.dumps(response)) < 10_000
    result = answered(response)
    assert result["result"]["status"] == "Failure"
    assert "exceed the 6291456-byte response limit" in result["result"]["message"]


def test_a_bug_still_answers_the_api_server(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_: Any) -> dict[str, Any]:
        raise RuntimeError("boom")

    monkeypatch.setattr(HANDLER.review, "answer", broken)
    result = answered(invoke())
    assert result["result"]["status"] == "Failure"
    assert "internal error" in result["result"]["message"]
