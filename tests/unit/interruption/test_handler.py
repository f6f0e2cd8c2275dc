"""The Lambda handler over the in-memory Kubernetes: SQS events in, partial batch failures and EMF out."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from autoscaler.cloudprovider.unavailable import InMemoryUnavailableOfferings
from autoscaler.controllers.interruption import InterruptionController
from autoscaler.kube.port import TransientClusterError
from autoscaler.simulation import interruptions as sample
from tests.unit.interruption.cluster_double import InMemoryCluster, make_node, make_nodeclaim
from tests.unit.interruption.test_controller import RecordingDeadLetters

ROOT = Path(__file__).parents[3]
A, B = "i-0a1b2c3d4e5f60001", "i-0a1b2c3d4e5f60002"


def load_handler() -> ModuleType:
    spec = importlib.util.spec_from_file_location("interruption_handler", ROOT / "functions/interruption/handler.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclass
class Context:
    function_name: str = "interruption"
    memory_limit_in_mb: int = 512
    invoked_function_arn: str = "arn:aws:lambda:us-west-2:111122223333:function:interruption"
    aws_request_id: str = "request-1"


@pytest.fixture
def cluster() -> InMemoryCluster:
    world = InMemoryCluster()
    world.add(make_nodeclaim("a", A, node_name="node-a"), make_node("node-a", A))
    world.add(make_nodeclaim("b", B, node_name="node-b"), make_node("node-b", B))
    return world


@pytest.fixture
def handler(cluster: InMemoryCluster) -> Iterator[tuple[ModuleType, RecordingDeadLetters]]:
    module = load_handler()
    dead_letters = RecordingDeadLetters()
    module.use_controller(InterruptionController(cluster, InMemoryUnavailableOfferings(), dead_letters))
    yield module, dead_letters
    module.use_controller(None)


def sample_event(name: str) -> dict[str, Any]:
    return json.loads((ROOT / "events" / "interruption" / f"{name}.json").read_text())  # type: ignore[no-any-return]


def emf_blobs(output: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in output.splitlines() if line.startswith("{") and "_aws" in line]


def test_every_sample_event_is_handled_without_failures(
    handler: tuple[ModuleType, RecordingDeadLetters], cluster: InMemoryCluster
) -> None:
    module, dead_letters = handler
    for path in sorted((ROOT / "events" / "interruption").glob("*.json")):
        response = module.handler(json.loads(path.read_text()), Context())
        assert response == {"batchItemFailures": []}, path.name
    assert len(dead_letters.sent) == 3  # the three malformed samples
    assert cluster.nodeclaim_objects["a"].metadata.deletion_timestamp is not None


def test_a_transient_failure_is_reported_as_a_batch_item_failure(
    handler: tuple[ModuleType, RecordingDeadLetters], cluster: InMemoryCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    module, _ = handler
    cluster.fail("delete", TransientClusterError("503"))
    module.use_controller(InterruptionController(cluster, InMemoryUnavailableOfferings(), None, max_workers=1))
    sent = datetime(2026, 3, 2, 14, 5, tzinfo=UTC)
    event = sample.sqs_event(
        [
            sample.sqs_record(sample.spot_interruption_warning(A), message_id="m1", sent_at=sent),
            sample.sqs_record(sample.state_change(B, "terminated"), message_id="m2", sent_at=sent),
            sample.sqs_record("not json", message_id="m3", sent_at=sent),  # no DLQ configured: redrive moves it
        ]
    )
    assert module.handler(event, Context()) == {
        "batchItemFailures": [{"itemIdentifier": "m1"}, {"itemIdentifier": "m3"}]
    }
    blobs = emf_blobs(capsys.readouterr().out)
    names = {m["Name"] for blob in blobs for m in blob["_aws"]["CloudWatchMetrics"][0]["Metrics"]}
    assert {
        "interruption_received_messages",
        "interruption_actions",
        "interruption_malformed_messages",
        "interruption_failed_messages",
        "InterruptionLatency",
        "interruption_batch_messages",
    } <= names
    received = {
        b["message_type"]: b["interruption_received_messages"] for b in blobs if "interruption_received_messages" in b
    }
    assert received == {"spot_interrupted": [1.0], "instance_terminated": [1.0], "malformed": [1.0]}
    (batch,) = [b for b in blobs if "interruption_batch_messages" in b]
    assert batch["interruption_batch_messages"] == [3.0] and batch["interruption_failed_messages"] == [1.0]
