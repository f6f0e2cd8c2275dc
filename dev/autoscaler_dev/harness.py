"""The Lambda harness: the real handlers, run in this process as Lambda runs them. The one implementation that the
embedded world, ``autoscaler invoke``, the tests and the benchmarks use:

- ``load_handler(name)``: ``functions/<name>/handler.py`` imported by path, as a fresh module (a new container);
- ``Context``: what the Lambda runtime passes, with the fields Powertools reads;
- ``InvocationDied``: Lambda ending an invocation part way (a timeout, the sandbox lost);
- ``sqs_record``: a received SQS message as the event source mapping hands it to the function.

Light on purpose (no moto, no aiohttp): unit tests over the in-memory doubles use it too.
"""

from __future__ import annotations

import importlib.util
import sys
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from autoscaler_dev import checkout

# The stack's timeouts (infra/catalog.py, which the dev package cannot import: tests/infra keeps the two equal).
TIMEOUT_SECONDS = {
    "provisioner": 120,
    "interruption": 20,
    "disruption": 240,
    "termination": 60,
    "garbage_collection": 60,
    "nodeclass": 60,
    "conversion": 10,
}
# The account and region of the ARN a context names when none is given (any well-formed ARN does).
_ARN_PREFIX = "arn:aws:lambda:us-west-2:111122223333:function:"


class InvocationDied(BaseException):
    """The invocation ended here (a timeout, the sandbox lost): nothing after this point ran.

    A ``BaseException``, so that no ``except Exception`` in the handler can go on after it, as nothing goes on
    after a real timeout."""


def load_handler(name: str, directory: Path | None = None) -> ModuleType:
    """A fresh module of ``functions/<name>/handler.py`` (or ``directory/<name>/handler.py``), as a new Lambda
    container imports it: module-level state such as cached controllers starts empty."""
    path = (directory or checkout.functions_dir()) / name / "handler.py"
    if not path.is_file():
        raise FileNotFoundError(f"no handler for function {name!r} at {path}")
    spec = importlib.util.spec_from_file_location(f"{name}_handler", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # as Lambda's import leaves it (pydantic resolves annotations through it)
    spec.loader.exec_module(module)
    return module


@dataclass
class Context:
    """What the Lambda runtime passes; Powertools reads these fields. The time left stays ``timeout_seconds``
    (a virtual clock, not the wall's, decides what an invocation has spent)."""

    function_name: str = "function"
    timeout_seconds: float = 60
    memory_limit_in_mb: int = 1024
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))  # a fresh one per invocation
    invoked_function_arn: str = ""

    def __post_init__(self) -> None:
        self.invoked_function_arn = self.invoked_function_arn or _ARN_PREFIX + self.function_name

    @classmethod
    def of(cls, name: str) -> Context:
        """The context of one invocation of function ``name``, with the timeout the stack gives it."""
        return cls(name, TIMEOUT_SECONDS.get(name, 60))

    def get_remaining_time_in_millis(self) -> int:
        return int(self.timeout_seconds * 1000)


def sqs_record(message: Mapping[str, Any], queue_arn: str, region: str | None = None) -> dict[str, Any]:
    """A received SQS message (``receive_message``'s shape) as Lambda's event source mapping hands it to the
    function (``region``: the queue's, read from its ARN unless given)."""
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": dict(message.get("Attributes", {})),
        "messageAttributes": {},
        "md5OfBody": message["MD5OfBody"],
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": region or queue_arn.split(":")[3],
    }
