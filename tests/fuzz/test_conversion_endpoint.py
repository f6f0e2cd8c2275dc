"""Fuzz the conversion webhook's entry points: the function URL handler and ``review.parse_review``.

(``review.answer`` over odd objects is already a property in tests/unit/apis/test_conversion_properties.py.)
Whatever a caller sends, the function answers HTTP: a 4xx Kubernetes Status with a message for a request that
is not a ConversionReview, or a 200 ConversionReview whose ``result.status`` is Success, or Failure with a
message; never an exception (which the API server would see as a 502 and a webhook timeout).
"""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from autoscaler.apis.conversion import review
from autoscaler_dev.harness import Context, load_handler
from tests.fuzz.budget import fuzz
from tests.fuzz.strategies import DEEP_JSON_TEXT, JSON, mutated

ROOT = Path(__file__).parents[2]
URL_EVENT = json.loads((ROOT / "events" / "conversion-review.json").read_text())
REVIEW = json.loads(URL_EVENT["body"])
MANIFESTS = [json.loads(json.dumps(d)) for d in REVIEW["request"]["objects"]]
DESIRED = st.sampled_from(
    ["karpenter.sh/v1", "karpenter.sh/v1beta1", "karpenter.k8s.aws/v1", "karpenter.k8s.aws/v1beta1", "v1", ""]
)


@st.composite
def reviews(draw: st.DrawFn) -> Any:
    """A ConversionReview close to the API server's: the sample with its request redrawn and mutated."""
    document = copy.deepcopy(REVIEW)
    document["request"]["desiredAPIVersion"] = draw(DESIRED)
    document["request"]["objects"] = draw(st.lists(st.sampled_from(MANIFESTS) | JSON, max_size=3))
    return draw(mutated(document, max_mutations=2)) if draw(st.booleans()) else document


REVIEW_BODIES = (
    reviews().map(json.dumps)
    | JSON.map(json.dumps)
    | st.text(max_size=100)
    | st.binary(max_size=100).map(lambda b: b.decode("latin-1"))
    | DEEP_JSON_TEXT
)


def assert_review_answer(answer: dict[str, Any], uid: str) -> None:
    result = answer["response"]["result"]
    assert answer["kind"] == "ConversionReview" and answer["response"]["uid"] == uid
    assert result["status"] in ("Success", "Failure")
    if result["status"] == "Failure":
        assert result["message"].strip() and len(result["message"]) <= review.MAX_MESSAGE_CHARS
        assert answer["response"]["convertedObjects"] == []


@fuzz(300)
@given(REVIEW_BODIES | REVIEW_BODIES.map(str.encode))
@example("[" * 5_000 + "]" * 5_000)
@example(b"\xff\xfe{}")
def test_any_body_is_a_request_or_a_4xx_review_error(body: str | bytes) -> None:
    """``parse_review`` takes any body (text or the bytes of a base64 body) to a request or a ReviewError with
    a 4xx status and a message; never another exception. A request it takes is answered Success or Failure."""
    try:
        request = review.parse_review(body)
    except review.ReviewError as error:
        assert 400 <= error.status < 500 and str(error).strip()
        return
    assert_review_answer(review.answer(request), request.uid)


@pytest.fixture(scope="module")
def conversion() -> Iterator[ModuleType]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("POWERTOOLS_METRICS_NAMESPACE", "fuzz")
        yield load_handler("conversion")


METHODS = st.sampled_from(["POST", "GET", "PUT", "DELETE", "OPTIONS", "post", ""]) | st.text(max_size=8)
HEADERS = st.dictionaries(st.text(min_size=1, max_size=20), st.text(max_size=40), max_size=4)


@st.composite
def url_events(draw: st.DrawFn) -> Any:
    """A function URL request: the sample with a random method, headers, body and base64 flag (Lambda builds
    the envelope itself, so its shape holds), and now and then the envelope mutated too (direct invocations)."""
    event = copy.deepcopy(URL_EVENT)
    event["requestContext"]["http"]["method"] = draw(st.just("POST") | METHODS)
    event["headers"] = {**event["headers"], **draw(HEADERS)}
    body = draw(REVIEW_BODIES)
    encoded = draw(st.booleans())
    if encoded and draw(st.integers(0, 3)):  # mostly valid base64, sometimes not
        body = base64.b64encode(body.encode("utf-8", "surrogatepass")).decode()
    event["body"], event["isBase64Encoded"] = body, encoded
    if not draw(st.integers(0, 5)):
        event = draw(mutated(event, max_mutations=2))
    return event


def _sized(size: int, encoded: bool) -> dict[str, Any]:
    """The sample carrying a body of ``size`` bytes (not JSON past its first bytes): the 413 boundary."""
    body = URL_EVENT["body"][:1] + " " * (size - 1)
    return {
        **URL_EVENT,
        "body": base64.b64encode(body.encode()).decode() if encoded else body,
        "isBase64Encoded": encoded,
    }


@fuzz(250)
@given(url_events() | JSON)
@example(_sized(review.MAX_PAYLOAD_BYTES + 1, encoded=False))
@example(_sized(review.MAX_PAYLOAD_BYTES + 1, encoded=True))
@example({**URL_EVENT, "body": "[" * 5_000 + "]" * 5_000})
@example({**URL_EVENT, "body": "not base64!", "isBase64Encoded": True})
def test_the_function_answers_every_request_with_http(conversion: ModuleType, event: Any) -> None:
    """Any invocation is answered with an HTTP response: a 4xx Status with a bounded message, or a 200
    ConversionReview with Success or Failure and a message; never an exception."""
    response = conversion.handler(event, Context("conversion"))
    assert response["headers"] == {"Content-Type": "application/json"}
    body = json.loads(response["body"])
    if response["statusCode"] == 200:
        assert_review_answer(body, body["response"]["uid"])
    else:
        assert response["statusCode"] in (400, 405, 413), response
        assert body["kind"] == "Status" and body["status"] == "Failure" and body["code"] == response["statusCode"]
        assert body["message"].strip() and len(body["message"]) < 1024
