"""Invoking the real Lambda handlers in tests (through the harness, ``autoscaler_dev.harness``): the sample events
EventBridge sends, and the environment the stack sets for a cluster in the moto world and the Kubernetes API
emulator."""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from autoscaler import runtime
from autoscaler.settings import STATE_TABLE_KEY
from autoscaler_dev import checkout
from autoscaler_dev.world.aws_world import REGION, AWSWorld


def sample_event(path: str) -> dict[str, Any]:
    """One of the sample events under events/ (a copy: tests may change it)."""
    return copy.deepcopy(json.loads((checkout.events_dir() / path).read_text()))


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
