"""The AWS call gate: the one place where the embedded world stands between a function and AWS, so that what
an account enforces (IAM, EC2's request rate limits) and what it costs (latency) apply to every call a function
makes.

How: each function's boto3 session (so its runtime's clients, ``providers/aws/clients.py``, built by the
composition root) carries botocore event hooks bound to the function's name. Two plug points:

- :meth:`Plug.on_call`, once per API call before anything is sent (``before-call``): IAM. A refusal answers the
  call as AWS would (a ``ClientError`` with AWS's code) without reaching moto, and botocore does not retry it;
- :meth:`Plug.on_attempt`, on every HTTP attempt inside botocore's retry loop (``before-send``): rate limits and
  latency. A throttled attempt is retried by the client's own retry policy, as against EC2;
  :meth:`Plug.on_response` when the attempt's answer is in (``response-received``): latency ends there.

Why hooks rather than a proxy in front of moto keyed by per-function credentials: the functions already run in
this process on sessions the world hands them, so the hook sees the call's parameters before serialization (the
tags, the launch template, the instance ids IAM needs) and the caller without decoding a wire protocol per
service; a proxy would have to parse four protocols back into parameters, and could not advance the virtual clock
any better. The world's own calls (actors, setup, the event source mappings) use other clients and pass freely,
as AWS's own services do.
"""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import boto3
import urllib3
from botocore.awsrequest import AWSResponse
from botocore.compat import HTTPHeaders

_CALL = "autoscaler_dev.aws_gate.call"  # the key of the call in botocore's request context


@dataclass(frozen=True)
class AwsCall:
    caller: str  # the function making it
    service: str  # IAM's service prefix: ec2, iam, sqs, dynamodb, ssm, eks, pricing
    operation: str  # CreateFleet
    params: Mapping[str, Any]  # as the code passed them
    protocol: str  # botocore's: ec2, query, json, rest-json


@dataclass(frozen=True)
class Refusal:
    status: int
    code: str
    message: str


class Plug(Protocol):
    def on_call(self, call: AwsCall) -> Refusal | None:
        """Once per API call, before its first attempt: None lets it through."""
        ...

    def on_attempt(self, call: AwsCall) -> Refusal | None:
        """Each HTTP attempt (retries included): None sends it."""
        ...

    def on_response(self, call: AwsCall) -> None:
        """Each attempt's answer has arrived (refused attempts included)."""
        ...


class AwsCallGate:
    def __init__(self, plugs: Sequence[Plug]) -> None:
        self.plugs = list(plugs)
        self._current = threading.local()  # the call whose attempts this thread is sending

    def session(self, caller: str) -> boto3.Session:
        """A session whose clients' calls go through the gate as ``caller``."""
        session = boto3.Session()
        events = session.events

        def remember(params: dict[str, Any], model: Any, context: dict[str, Any], **_: Any) -> None:
            service = model.service_model
            prefix = service.signing_name or service.endpoint_prefix
            context[_CALL] = AwsCall(caller, prefix, model.name, dict(params), service.protocol)

        def on_call(context: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]] | None:
            call: AwsCall | None = context.get(_CALL)
            if call is None:
                return None
            self._current.call = call
            for plug in self.plugs:
                refusal = plug.on_call(call)
                if refusal is not None:
                    return _answer(refusal, b""), _parsed(refusal)
            return None

        def on_attempt(request: Any, **_: Any) -> AWSResponse | None:
            call: AwsCall | None = getattr(self._current, "call", None)
            if call is None:
                return None
            for plug in self.plugs:
                refusal = plug.on_attempt(call)
                if refusal is not None:
                    return _answer(refusal, _body(refusal, call.protocol), url=request.url)
            return None

        def on_response(context: dict[str, Any], **_: Any) -> None:
            call: AwsCall | None = context.get(_CALL)
            if call is not None:
                for plug in self.plugs:
                    plug.on_response(call)

        events.register("before-parameter-build", remember)
        events.register("before-call", on_call)  # type: ignore[arg-type]  # botocore lets hooks answer a call
        events.register("before-send", on_attempt)  # type: ignore[arg-type]
        events.register("response-received", on_response)
        return session


def _parsed(refusal: Refusal) -> dict[str, Any]:
    return {
        "Error": {"Code": refusal.code, "Message": refusal.message},
        "ResponseMetadata": {"HTTPStatusCode": refusal.status, "RequestId": "aws-gate"},
    }


def _body(refusal: Refusal, protocol: str) -> bytes:
    """The error as the service's protocol puts it on the wire, for botocore's parser and retry policy."""
    if protocol in ("json", "rest-json", "smithy-rpc-v2-cbor"):
        return json.dumps({"__type": refusal.code, "message": refusal.message}).encode()
    error = f"<Error><Code>{refusal.code}</Code><Message>{refusal.message}</Message></Error>"
    if protocol == "ec2":
        return f"<Response><Errors>{error}</Errors><RequestID>aws-gate</RequestID></Response>".encode()
    return f"<ErrorResponse>{error}<RequestId>aws-gate</RequestId></ErrorResponse>".encode()


def _answer(refusal: Refusal, body: bytes, url: str = "aws-gate") -> AWSResponse:
    headers = HTTPHeaders()
    headers["x-amzn-ErrorType"] = refusal.code
    raw = urllib3.HTTPResponse(body=io.BytesIO(body), preload_content=False)
    return AWSResponse(url, refusal.status, headers, raw)
