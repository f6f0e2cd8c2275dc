"""The conversion webhook's HTTP exchange, around ``review``: a function URL request's method and body in, the
HTTP response out (a ConversionReview, or a Kubernetes Status for a request that is not one), with what the
function logs and counts. Pure.

Everything echoed from the request into a log line is cut to LOGGED_CHARS: the function URL is public, and a
hostile caller must not be able to fill the logs. A bug while converting still answers the API server (a
Failure review), and so does an answer too large for a function URL response.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
from dataclasses import dataclass
from typing import Any, Literal

from autoscaler.apis.conversion import review

log = logging.getLogger(__name__)
LOGGED_CHARS = 256  # what we echo of anything the caller sent: uids, versions, messages
Outcome = Literal["converted", "conversion failed", "rejected request"]


@dataclass(frozen=True)
class Exchange:
    outcome: Outcome
    response: dict[str, Any]  # the function URL response
    count: int  # of ``outcome``: objects converted, or one review failed or request rejected
    logged: dict[str, Any]  # the log line's fields


def cut(text: object) -> str:
    shown = str(text)
    return shown if len(shown) <= LOGGED_CHARS else shown[:LOGGED_CHARS] + "…"


def _http(status: int, body: dict[str, Any]) -> dict[str, Any]:
    return {"statusCode": status, "headers": {"Content-Type": "application/json"}, "body": json.dumps(body)}


def rejected(error: review.ReviewError) -> Exchange:
    """A 4xx answer in the shape of a Kubernetes Status, which the API server quotes in its error."""
    body = {"apiVersion": "v1", "kind": "Status", "status": "Failure", "message": str(error), "code": error.status}
    return Exchange("rejected request", _http(error.status, body), 1, {"status": error.status, "reason": cut(error)})


def _review_body(method: str, body: str | None, base64_encoded: bool) -> str | bytes:
    if method != "POST":
        raise review.ReviewError(405, f"method {cut(method)} not allowed: POST a ConversionReview")
    body = body or ""
    if len(body) > review.MAX_PAYLOAD_BYTES * 4 // 3 + 4:
        raise review.ReviewError(413, f"body of {len(body)} bytes exceeds the {review.MAX_PAYLOAD_BYTES}-byte limit")
    if not base64_encoded:
        return body
    try:
        return base64.b64decode(body, validate=True)
    except (binascii.Error, ValueError):
        raise review.ReviewError(400, "body is marked base64-encoded but is not valid base64") from None


def exchange(method: str, body: str | None, base64_encoded: bool) -> Exchange:
    """The answer to one function URL request."""
    try:
        request = review.parse_review(_review_body(method, body, base64_encoded))
    except review.ReviewError as error:
        return rejected(error)
    try:
        answer = review.answer(request)
    except Exception:  # a bug of ours must still answer the API server, not time it out
        log.exception("conversion raised (uid %s)", cut(request.uid))
        answer = review.failure(request, "internal error converting the objects; see the conversion function's logs")
    response = _http(200, answer)
    size = len(json.dumps(response))
    if size > review.MAX_PAYLOAD_BYTES:
        limit = f"the {review.MAX_PAYLOAD_BYTES}-byte response limit of Lambda function URLs"
        answer = review.failure(request, f"the converted objects ({size} bytes) exceed {limit}")
        response = _http(200, answer)
    result = answer["response"]["result"]
    logged = {
        "uid": cut(request.uid),
        "desired_api_version": cut(request.desired_api_version),
        "objects": len(request.objects),
    }
    if result["status"] == "Success":
        return Exchange("converted", response, len(request.objects), logged)
    return Exchange("conversion failed", response, 1, {**logged, "reason": cut(result.get("message", ""))})
