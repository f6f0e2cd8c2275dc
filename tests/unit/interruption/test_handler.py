"""The Lambda handler over the in-memory Kubernetes: SQS events in, partial batch failures and EMF out."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from autoscaler import metrics as m
from autoscaler import runtime
from autoscaler.kube.port import ObjectRef, TransientClusterError
from autoscaler.powertools import BatchFailed
from autoscaler_dev.harness import Context, load_handler
from autoscaler_dev.world import interruptions as sample
from tests.support.memory_cluster import MemoryCluster
from tests.support.memory_runtime import memory_runtime
from tests.support.metrics import emf_records, metric_values
from tests.unit.interruption.builders import make_node, make_nodeclaim
from tests.unit.interruption.controller_support import RecordingDeadLetters

ROOT = Path(__file__).parents[3]
A, B = "i-0a1b2c3d4e5f60001", "i-0a1b2c3d4e5f60002"


@pytest.fixture
def cluster() -> MemoryCluster:
    world = MemoryCluster()
    world.add(make_nodeclaim("a", A, node_name="node-a"), make_node("node-a", A))
    world.add(make_nodeclaim("b", B, node_name="node-b"), make_node("node-b", B))
    return world


@pytest.fixture
def handler(cluster: MemoryCluster) -> Iterator[tuple[ModuleType, RecordingDeadLetters]]:
    module = load_handler("interruption")
    dead_letters = RecordingDeadLetters()
    runtime.install(memory_runtime(cluster, dead_letters=dead_letters))
    yield module, dead_letters
    runtime.install(None)


def sample_event(name: str) -> dict[str, Any]:
    return json.loads((ROOT / "events" / "interruption" / f"{name}.json").read_text())  # type: ignore[no-any-return]


def test_every_sample_event_is_handled_without_failures(
    handler: tuple[ModuleType, RecordingDeadLetters], cluster: MemoryCluster
) -> None:
    module, dead_letters = handler
    for path in sorted((ROOT / "events" / "interruption").glob("*.json")):
        response = module.handler(json.loads(path.read_text()), Context.of("interruption"))
        assert response == {"batchItemFailures": []}, path.name
    assert len(dead_letters.sent) == 3  # the three malformed samples
    assert cluster.stored("NodeClaim", "a")["metadata"].get("deletionTimestamp")  # type: ignore[index]


def test_a_transient_failure_is_reported_as_a_batch_item_failure(
    handler: tuple[ModuleType, RecordingDeadLetters], cluster: MemoryCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    module, _ = handler
    delete = cluster.delete

    def failing_for_a(ref: ObjectRef, **options: Any) -> bool:  # the batch's actions run in parallel
        if ref.name == "a":
            raise TransientClusterError("503")
        return delete(ref, **options)

    cluster.delete = failing_for_a  # type: ignore[method-assign]
    runtime.install(memory_runtime(cluster))  # no dead-letter queue configured
    sent = datetime(2026, 3, 2, 14, 5, tzinfo=UTC)
    event = sample.sqs_event(
        [
            sample.sqs_record(sample.spot_interruption_warning(A), message_id="m1", sent_at=sent),
            sample.sqs_record(sample.state_change(B, "terminated"), message_id="m2", sent_at=sent),
            sample.sqs_record("not json", message_id="m3", sent_at=sent),  # no DLQ configured: redrive moves it
        ]
    )
    assert module.handler(event, Context.of("interruption")) == {
        "batchItemFailures": [{"itemIdentifier": "m1"}, {"itemIdentifier": "m3"}]
    }
    records = emf_records(capsys.readouterr().out)
    names = {metric["Name"] for record in records for metric in record["_aws"]["CloudWatchMetrics"][0]["Metrics"]}
    assert {
        m.INTERRUPTION_RECEIVED_MESSAGES,
        m.INTERRUPTION_ACTIONS_PERFORMED,
        m.INTERRUPTION_MALFORMED_MESSAGES,
        m.INTERRUPTION_FAILED_MESSAGES,
        m.INTERRUPTION_MESSAGE_QUEUE_DURATION,
        m.INTERRUPTION_BATCH_SIZE,
    } <= names
    received = {
        r["message_type"]: r[m.INTERRUPTION_RECEIVED_MESSAGES] for r in records if m.INTERRUPTION_RECEIVED_MESSAGES in r
    }
    assert received == {"spot_interrupted": [1.0], "instance_terminated": [1.0], "malformed": [1.0]}
    assert metric_values(records, m.INTERRUPTION_BATCH_SIZE) == [3.0]
    assert metric_values(records, m.INTERRUPTION_FAILED_MESSAGES) == [1.0]


def test_a_batch_that_failed_whole_fails_the_invocation(
    handler: tuple[ModuleType, RecordingDeadLetters], cluster: MemoryCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every record to retry: the invocation raises (Lambda counts an error, the error alarm can fire, and SQS
    redelivers the batch) rather than succeeding with every record reported, and the metrics still go out."""
    module, _ = handler

    def unreachable(ref: ObjectRef, **options: Any) -> bool:
        raise TransientClusterError("503")

    cluster.delete = unreachable  # type: ignore[method-assign]
    sent = datetime(2026, 3, 2, 14, 5, tzinfo=UTC)
    event = sample.sqs_event(
        [
            sample.sqs_record(sample.spot_interruption_warning(A), message_id="m1", sent_at=sent),
            sample.sqs_record(sample.spot_interruption_warning(B), message_id="m2", sent_at=sent),
        ]
    )
    with pytest.raises(BatchFailed, match="all 2 records"):
        module.handler(event, Context())
    assert metric_values(emf_records(capsys.readouterr().out), m.INTERRUPTION_FAILED_MESSAGES) == [2.0]
