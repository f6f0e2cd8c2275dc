"""Conversion webhook: the API server POSTs a ConversionReview to this function's URL and gets one back.

Thin: read the function URL event, let ``autoscaler.apis.conversion.review`` decide, return its answer.
The function holds no credentials and calls nothing: it only transforms the objects it is sent.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.parser import ValidationError, parse
from aws_lambda_powertools.utilities.parser.models import LambdaFunctionUrlModel
from aws_lambda_powertools.utilities.typing import LambdaContext

from autoscaler import metrics as names
from autoscaler.apis.conversion import review

# Powertools of its own rather than ``autoscaler.runtime``'s: this function wires no adapters, and importing them
# would slow the cold start of a webhook the API server waits for.
logger = Logger(service="conversion")
metrics = Metrics(namespace=os.environ.get("POWERTOOLS_METRICS_NAMESPACE", names.NAMESPACE), service="conversion")
LOGGED_CHARS = 256  # what we echo of anything the caller sent: uids, versions, messages


def _cut(text: object) -> str:
    shown = str(text)
    return shown if len(shown) <= LOGGED_CHARS else shown[:LOGGED_CHARS] + "…"


def _http(status: int, body: dict[str, Any]) -> dict[str, Any]:
    return {"statusCode": status, "headers": {"Content-Type": "application/json"}, "body": json.dumps(body)}


def _status(error: review.ReviewError) -> dict[str, Any]:
    """A 4xx answer in the shape of a Kubernetes Status, which the API server quotes in its error."""
    body = {"apiVersion": "v1", "kind": "Status", "status": "Failure", "message": str(error), "code": error.status}
    return _http(error.status, body)


def _review_body(event: dict[str, Any]) -> str | bytes:
    try:
        url_event = parse(event=event, model=LambdaFunctionUrlModel)
    except ValidationError:
        raise review.ReviewError(400, "not a Lambda function URL request") from None
    method = url_event.requestContext.http.method
    if method != "POST":
        raise review.ReviewError(405, f"method {_cut(method)} not allowed: POST a ConversionReview")
    body = url_event.body or ""
    if len(body) > review.MAX_PAYLOAD_BYTES * 4 // 3 + 4:
        raise review.ReviewError(413, f"body of {len(body)} bytes exceeds the {review.MAX_PAYLOAD_BYTES}-byte limit")
    if not url_event.isBase64Encoded:
        return body
    try:
        return base64.b64decode(body, validate=True)
    except (binascii.Error, ValueError):
        raise review.ReviewError(400, "body is marked base64-encoded but is not valid base64") from None


@metrics.log_metrics
@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    try:
        request = review.parse_review(_review_body(event))
    except review.ReviewError as error:
        logger.warning("rejected request", extra={"status": error.status, "reason": _cut(error)})
        metrics.add_metric(name=names.CONVERSION_REJECTED_REQUESTS, unit=MetricUnit.Count, value=1)
        return _status(error)

    try:
        answer = review.answer(request)
    except Exception:  # a bug of ours must still answer the API server, not time it out
        logger.exception("conversion raised", extra={"uid": _cut(request.uid)})
        answer = review.failure(request, "internal error converting the objects; see the conversion function's logs")
    response = _http(200, answer)
    size = len(json.dumps(response))
    if size > review.MAX_PAYLOAD_BYTES:
        answer = review.failure(
            request,
            f"the converted objects ({size} bytes) exceed the {review.MAX_PAYLOAD_BYTES}-byte response limit "
            "of Lambda function URLs",
        )
        response = _http(200, answer)

    result = answer["response"]["result"]
    succeeded = result["status"] == "Success"
    metrics.add_metric(
        name=names.CONVERSION_CONVERTED_OBJECTS if succeeded else names.CONVERSION_FAILED_REVIEWS,
        unit=MetricUnit.Count,
        value=len(request.objects) if succeeded else 1,
    )
    logger.info(
        "converted" if succeeded else "conversion failed",
        extra={
            "uid": _cut(request.uid),
            "desired_api_version": _cut(request.desired_api_version),
            "objects": len(request.objects),
            **({} if succeeded else {"reason": _cut(result.get("message", ""))}),
        },
    )
    return response
