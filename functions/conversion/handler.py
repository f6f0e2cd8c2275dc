"""Conversion webhook: the API server POSTs a ConversionReview to this function's URL and gets one back.

Parse the function URL request, let ``autoscaler.apis.conversion.webhook`` answer it, return the HTTP response.
The function holds no credentials and calls nothing: it only transforms the objects it is sent. It wires no
adapters (``autoscaler.runtime`` is never imported, so the cold start the API server waits for stays short) and
traces nothing.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.parser import ValidationError, parse
from aws_lambda_powertools.utilities.parser.exceptions import InvalidModelTypeError
from aws_lambda_powertools.utilities.parser.models import LambdaFunctionUrlModel

from autoscaler import metrics as names
from autoscaler.apis.conversion import review, webhook
from autoscaler.metrics import MetricPoint
from autoscaler.powertools import Answer, Invocation, powertools

tools = powertools("conversion", tracing=False, preload=())  # it never talks to the cluster
COUNTED = {
    "converted": names.CONVERSION_CONVERTED_OBJECTS,
    "conversion failed": names.CONVERSION_FAILED_REVIEWS,
    "rejected request": names.CONVERSION_REJECTED_REQUESTS,
}


@tools.handler()
def handler(event: Any, invocation: Invocation) -> Answer:
    try:
        request = parse(event=event, model=LambdaFunctionUrlModel)
    except (ValidationError, InvalidModelTypeError):  # the latter: Powertools' sourceIp check on a non-string
        answer = webhook.rejected(review.ReviewError(400, "not a Lambda function URL request"))
    else:
        answer = webhook.exchange(request.requestContext.http.method, request.body, request.isBase64Encoded)
    point = MetricPoint(COUNTED[answer.outcome], answer.count)
    return Answer(answer.outcome, answer.response, [point], answer.logged, warning=answer.outcome == "rejected request")
