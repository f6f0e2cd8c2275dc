"""Invoking the real Lambda handlers in tests: load ``functions/<name>/handler.py`` as Lambda does (by path, no
package), a context like the runtime's, the events EventBridge sends, and the environment the stack sets for a
cluster in the moto world and the Kubernetes API emulator."""

from __future__ import annotations

import copy
import importlib.util
import json
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from autoscaler import runtime
from autoscaler.settings import STATE_TABLE_KEY
from autoscaler.simulation.aws_world import REGION, AWSWorld

ROOT = Path(__file__).parents[2]


def load_handler(function: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"{function}_handler", ROOT / "functions" / function / "handler.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # as Lambda's import leaves it (pydantic resolves annotations through it)
    spec.loader.exec_module(module)
    return module


@dataclass
class Context:
    """What the Lambda runtime passes; Powertools' logger reads these fields."""

    function_name: str = "function"
    memory_limit_in_mb: int = 512
    invoked_function_arn: str = "arn:aws:lambda:us-west-2:111122223333:function:function"
    aws_request_id: str = "9a1c0e4e-2f0d-4a6b-8d6e-7f0c1b2a3d4e"
    remaining_millis: int = 60_000

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_millis


def context(function: str) -> Context:
    """A fresh request id per invocation, as Lambda gives."""
    return Context(function_name=function, aws_request_id=str(uuid.uuid4()))


def sample_event(path: str) -> dict[str, Any]:
    """One of the sample events under events/ (a copy: tests may change it)."""
    return copy.deepcopy(json.loads((ROOT / "events" / path).read_text()))


@dataclass(frozen=True)
class LambdaEnvironment:
    cluster_name: str
    state_table: str


def state_table(world: AWSWorld) -> str:
    """A state table as the stack creates it (key ``id``)."""
    name = f"state-{uuid.uuid4().hex[:8]}"
    world.client("dynamodb").create_table(
        TableName=name,
        KeySchema=[{"AttributeName": STATE_TABLE_KEY, "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": STATE_TABLE_KEY, "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    return name


@pytest.fixture
def lambda_environment(monkeypatch: pytest.MonkeyPatch, aws_world: AWSWorld, kube: Any) -> Iterator[LambdaEnvironment]:
    """The function environment for a cluster of its own (a unique name, so that the shared account's other
    resources are another cluster's), its API server the emulator, its state table in moto. The container's
    runtime is rebuilt from it on the next invocation."""
    environment = LambdaEnvironment(f"fn-{uuid.uuid4().hex[:8]}", state_table(aws_world))
    for name in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST"):
        monkeypatch.delenv(name, raising=False)
    for name, value in {
        "CLUSTER_NAME": environment.cluster_name,
        "AWS_REGION": REGION,
        "AWS_ENDPOINT_URL": aws_world.endpoint,
        "CLUSTER_ENDPOINT": kube.url,
        "STATE_TABLE_NAME": environment.state_table,
        "ISOLATED_VPC": "true",
    }.items():
        monkeypatch.setenv(name, value)
    runtime.install(None)
    yield environment
    runtime.install(None)
