"""The conversion function's URL is public (AuthType NONE: the API server cannot sign), so anyone may send it
anything. What `tests/functional/test_conversion_function.py` does not already show: megabytes of hostile
input in every field the handler reads get a 4xx, and the JSON lines it logs for them stay small."""

from __future__ import annotations

import base64
import copy
import json
import logging
from typing import Any

import pytest

from autoscaler_dev.harness import Context, load_handler
from tests.support.lambdas import sample_event

HANDLER = load_handler("conversion")
SAMPLE = sample_event("conversion-review.json")
FILLER = "Z" * (3 * 1024 * 1024)  # 3 MiB of one letter: any run of it in a log line is an echo
LOG_BOUND = 4096  # bytes of log output one rejected request may cost


def _review(**request: Any) -> str:
    body = {"uid": "u-1", "desiredAPIVersion": "karpenter.sh/v1", "objects": [], **request}
    return json.dumps({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "request": body})


def _event(**changes: Any) -> dict[str, Any]:
    event = copy.deepcopy(SAMPLE)
    method = changes.pop("method", None)
    if method is not None:
        event["requestContext"]["http"]["method"] = method
    event.update(changes)
    return event


def _from(source_ip: Any) -> dict[str, Any]:
    event = copy.deepcopy(SAMPLE)
    event["requestContext"]["http"]["sourceIp"] = source_ip
    return event


MALFORMED = [
    ("huge-kind", _event(body=json.dumps({"kind": FILLER, "apiVersion": "v1"})), 400),
    ("huge-api-version", _event(body=json.dumps({"kind": "ConversionReview", "apiVersion": FILLER})), 400),
    ("huge-uid-of-wrong-type", _event(body=_review(uid=[FILLER])), 400),
    ("huge-objects-of-wrong-type", _event(body=_review(objects=FILLER)), 400),
    ("huge-broken-json", _event(body="{" + FILLER), 400),
    ("huge-method", _event(method=FILLER), 400),
    ("raw-body-over-the-limit", _event(body="Z" * (7 * 1024 * 1024)), 413),
    (
        "base64-decoding-over-the-limit",
        _event(body=base64.b64encode(b"Z" * (6 * 1024 * 1024 + 1)).decode(), isBase64Encoded=True),
        413,
    ),
    ("body-not-a-string", _event(body={"kind": FILLER}), 400),
    ("no-request-context", _event(requestContext=None), 400),
    ("source-ip-not-a-string", _from({"::": FILLER}), 400),  # Powertools' check raised on it, not a 400
]


def _logged(caplog: pytest.LogCaptureFixture) -> str:
    """What the function wrote: each record as its Powertools JSON line (every extra field included)."""
    formatter = HANDLER.tools.logger.registered_formatter
    return "\n".join(formatter.format(record) for record in caplog.records if record.name == "conversion")


@pytest.mark.parametrize(("event", "status"), [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED])
def test_hostile_requests_get_a_4xx_and_a_bounded_log(
    caplog: pytest.LogCaptureFixture, event: dict[str, Any], status: int
) -> None:
    caplog.set_level(logging.DEBUG)
    response = HANDLER.handler(event, Context(function_name="conversion", memory_limit_in_mb=256))
    assert response["statusCode"] == status
    body = json.loads(response["body"])
    assert (body["kind"], body["code"]) == ("Status", status)
    logged = _logged(caplog)
    assert "rejected request" in logged
    assert len(logged) < LOG_BOUND and "Z" * 300 in FILLER and "Z" * 300 not in logged


def test_a_valid_review_with_huge_fields_logs_them_cut(caplog: pytest.LogCaptureFixture) -> None:
    """Well-formed but hostile: the review fails (200 with a Failure result) and the log quotes 256 chars at most."""
    caplog.set_level(logging.DEBUG)
    half = FILLER[: len(FILLER) // 2]  # both fields within the 6 MiB payload limit
    objects = json.loads(SAMPLE["body"])["request"]["objects"]
    event = _event(body=_review(uid="u" + half, desiredAPIVersion="karpenter.sh/" + half, objects=objects))
    response = HANDLER.handler(event, Context(function_name="conversion", memory_limit_in_mb=256))
    assert response["statusCode"] == 200
    assert json.loads(response["body"])["response"]["result"]["status"] == "Failure"
    logged = _logged(caplog)
    assert "conversion failed" in logged and len(logged) < LOG_BOUND and "Z" * 300 not in logged
