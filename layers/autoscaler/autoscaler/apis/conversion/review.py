"""Answer an apiextensions.k8s.io ConversionReview: the decisions of the conversion webhook.

A review that is not one (bad JSON, missing uid, objects not a list) is the caller's error:
``ReviewError`` with an HTTP status, which the API server logs. A well-formed review always gets a
ConversionReview back: every object converted (``result.status: Success``), or none and
``result.status: Failure`` with a message naming each object that failed and why.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from autoscaler.apis.conversion.convert import ConversionError, convert

REVIEW_KIND = "ConversionReview"
REVIEW_VERSIONS = ("apiextensions.k8s.io/v1", "apiextensions.k8s.io/v1beta1")
# Lambda function URLs take and return at most 6 MB (buffered responses); reviews are far smaller.
MAX_PAYLOAD_BYTES = 6 * 1024 * 1024
MAX_MESSAGE_CHARS = 4096  # a failure message the API server logs and shows; longer ones are cut


class ReviewError(ValueError):
    """The request is not a ConversionReview we can answer; ``status`` is the HTTP status to return."""

    def __init__(self, status: int, message: str) -> None:
        self.status = status
        super().__init__(message)


@dataclass(frozen=True)
class ConversionRequest:
    api_version: str
    uid: str
    desired_api_version: str
    objects: list[Any]


def parse_review(body: str | bytes) -> ConversionRequest:
    """The request of a ConversionReview body, or ReviewError (413 when too large, else 400)."""
    if len(body) > MAX_PAYLOAD_BYTES:
        raise ReviewError(413, f"ConversionReview of {len(body)} bytes exceeds the {MAX_PAYLOAD_BYTES}-byte limit")
    try:
        review = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as error:  # RecursionError: nested too deep
        raise ReviewError(400, f"body is not JSON: {error}") from None
    if not isinstance(review, dict):
        raise ReviewError(400, "body is not a ConversionReview: expected a JSON object")
    api_version, kind = review.get("apiVersion"), review.get("kind")
    if kind != REVIEW_KIND or api_version not in REVIEW_VERSIONS:
        raise ReviewError(
            400, f"expected kind {REVIEW_KIND} in {' or '.join(REVIEW_VERSIONS)}, got {kind!r} in {api_version!r}"
        )
    request = review.get("request")
    if not isinstance(request, dict):
        raise ReviewError(400, "ConversionReview has no request object")
    uid, desired, objects = request.get("uid"), request.get("desiredAPIVersion"), request.get("objects")
    if not isinstance(uid, str) or not uid:
        raise ReviewError(400, "request.uid must be a non-empty string")
    if not isinstance(desired, str) or not desired:
        raise ReviewError(400, "request.desiredAPIVersion must be a non-empty string")
    if not isinstance(objects, list):
        raise ReviewError(400, "request.objects must be a list")
    return ConversionRequest(str(api_version), uid, desired, objects)


def _response(request: ConversionRequest, converted: list[dict[str, Any]], failure: str | None) -> dict[str, Any]:
    result: dict[str, Any] = {"status": "Success"} if failure is None else {"status": "Failure", "message": failure}
    return {
        "apiVersion": request.api_version,
        "kind": REVIEW_KIND,
        "response": {"uid": request.uid, "convertedObjects": converted, "result": result},
    }


def failure(request: ConversionRequest, message: str) -> dict[str, Any]:
    """A review answering ``request`` with a failure (message cut to MAX_MESSAGE_CHARS)."""
    if len(message) > MAX_MESSAGE_CHARS:
        message = message[: MAX_MESSAGE_CHARS - 1] + "…"
    return _response(request, [], message)


def answer(request: ConversionRequest, nodepool_expire_after: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The ConversionReview answering ``request``: all objects converted, or a failure naming the bad ones."""
    converted, errors = [], []
    for index, document in enumerate(request.objects):
        try:
            converted.append(convert(document, request.desired_api_version, nodepool_expire_after))
        except ConversionError as error:
            errors.append(f"objects[{index}]: {error}")
    if errors:
        return failure(request, f"converting to {request.desired_api_version}: " + " | ".join(errors))
    return _response(request, converted, None)
