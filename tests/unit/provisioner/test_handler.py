"""The provisioner handler's parsing, the FIFO skip rule, partial batch failures and failed passes, with the
pass itself replaced by a recording double (the pass is tested end to end in tests/functional/provisioner)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest
from pydantic import ValidationError

from autoscaler import metrics, runtime
from autoscaler.controllers.batch_skip import InMemoryLastPass
from autoscaler.metrics import MetricPoint
from autoscaler.providers.aws.deadletters import SqsVisibility
from autoscaler_dev.harness import Context, load_handler
from tests.support.memory_cluster import MemoryCluster
from tests.support.memory_runtime import memory_runtime

SAMPLES = Path(__file__).parents[3] / "events" / "forwarder"
T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
QUEUE = "arn:aws:sqs:us-west-2:123456789012:provisioning.fifo"
CONTEXT = Context.of("provisioner")


@dataclass
class FakeResult:
    started_at: datetime

    def summary(self) -> dict[str, Any]:
        return {"launched": 2, "pods": 3}

    def metric_points(self) -> list[MetricPoint]:
        return [MetricPoint(metrics.NODECLAIMS_LAUNCHED, 2, dimensions=(("nodepool", "default"),))]


@dataclass
class RecordingPass:
    started_at: datetime = T0
    runs: list[datetime | None] = field(default_factory=list)
    error: Exception | None = None

    def run(self, time_left: Any, since: datetime | None = None) -> FakeResult:
        if self.error is not None:
            raise self.error
        self.runs.append(since)
        return FakeResult(self.started_at)


@dataclass
class FakeQueue:
    released: list[str] = field(default_factory=list)

    def get_queue_url(self, QueueName: str, QueueOwnerAWSAccountId: str) -> dict[str, str]:
        return {"QueueUrl": f"https://sqs/{QueueOwnerAWSAccountId}/{QueueName}"}

    def change_message_visibility(self, QueueUrl: str, ReceiptHandle: str, VisibilityTimeout: int) -> None:
        assert VisibilityTimeout == 0
        self.released.append(ReceiptHandle)


@pytest.fixture
def handler(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[ModuleType, RecordingPass, InMemoryLastPass, FakeQueue]]:
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "true")
    module = load_handler("provisioner")
    reconciler, store, queue = RecordingPass(), InMemoryLastPass(), FakeQueue()
    released = SqsVisibility(SimpleNamespace(sqs=queue))  # type: ignore[arg-type]  # the SQS client's double
    container = memory_runtime(MemoryCluster(), last_pass=store, redelivery=released)
    container.controllers.provisioning_pass = reconciler  # type: ignore[assignment]  # the pass's double
    runtime.install(container)
    yield module, reconciler, store, queue
    runtime.install(None)


def forwarder(observed: datetime, detail_type: str = "Pod Unschedulable") -> dict[str, Any]:
    event: dict[str, Any] = json.loads((SAMPLES / "pod-unschedulable.json").read_text())
    event["detail-type"] = detail_type
    event["detail"]["observedAt"] = observed.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return event


def scheduled(at: datetime) -> dict[str, Any]:
    return {
        "version": "0",
        "id": "sweep-1",
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": "123456789012",
        "time": at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": "us-west-2",
        "resources": [],
        "detail": {},
    }


def batch(*bodies: Any) -> dict[str, Any]:
    return {
        "Records": [
            {
                "messageId": f"m{i}",
                "receiptHandle": f"r{i}",
                "body": body if isinstance(body, str) else json.dumps(body),
                "attributes": {"MessageGroupId": "provisioning", "ApproximateReceiveCount": "1"},
                "messageAttributes": {},
                "md5OfBody": "x",
                "eventSource": "aws:sqs",
                "eventSourceARN": QUEUE,
                "awsRegion": "us-west-2",
            }
            for i, body in enumerate(bodies)
        ]
    }


def test_trigger_times(handler: Any) -> None:
    module = handler[0]
    observed = T0 + timedelta(microseconds=250)
    assert module.trigger(forwarder(observed)).time == observed
    assert module.trigger(scheduled(T0)).time == T0 + timedelta(seconds=1)  # the end of its whole second
    other = {**scheduled(T0), "source": "aws.ec2", "detail-type": "EC2 Instance State-change Notification"}
    assert module.trigger(other) is None
    assert module.trigger({**forwarder(T0), "detail": {"version": "1"}}) is None  # no observedAt: not ours
    with pytest.raises(ValidationError):
        module.trigger({"hello": "world"})


def test_a_batch_runs_one_pass_and_reports_only_unreadable_records(handler: Any) -> None:
    module, reconciler, store, queue = handler
    other = {**scheduled(T0), "source": "aws.health"}
    result = module.handler(batch(forwarder(T0), "not json", other, {"no": "envelope"}, scheduled(T0)), CONTEXT)
    assert result["batchItemFailures"] == [{"itemIdentifier": "m1"}, {"itemIdentifier": "m3"}]
    assert queue.released == ["r1", "r3"]  # visible again at once: the FIFO group is not held up
    assert len(reconciler.runs) == 1 and result["pass"] == {"launched": 2, "pods": 3}
    assert store.started_at() == T0


def test_a_batch_older_than_the_last_pass_is_acknowledged_without_a_pass(handler: Any) -> None:
    module, reconciler, store, _ = handler
    store.record(T0 + timedelta(seconds=30))
    result = module.handler(batch(forwarder(T0), scheduled(T0)), CONTEXT)
    assert result == {"batchItemFailures": [], "pass": {"skipped": "every event predates the last completed pass"}}
    assert reconciler.runs == []
    result = module.handler(batch(forwarder(T0 + timedelta(seconds=29))), CONTEXT)  # within the clock margin
    assert reconciler.runs == [T0 + timedelta(seconds=30)]  # the pass learns when the previous one started


def test_a_failed_pass_acknowledges_the_batch_and_records_nothing(handler: Any) -> None:
    module, reconciler, store, _ = handler
    reconciler.error = RuntimeError("the API server is unreachable")
    result = module.handler(batch(forwarder(T0)), CONTEXT)
    assert result == {"batchItemFailures": [], "pass": {"failed": True}}
    assert store.started_at() is None


def test_a_batch_of_nothing_readable_runs_no_pass(handler: Any) -> None:
    module, reconciler, _, _ = handler
    result = module.handler(batch("garbage", "more garbage"), CONTEXT)
    assert len(result["batchItemFailures"]) == 2 and reconciler.runs == []


def test_direct_invocations(handler: Any) -> None:
    module, _reconciler, _, _ = handler
    assert module.handler(scheduled(T0), CONTEXT)["pass"]["launched"] == 2
    assert module.handler({**scheduled(T0), "source": "aws.ec2"}, CONTEXT) == {
        "pass": {"skipped": "not a provisioning trigger"}
    }
    with pytest.raises(ValueError, match="expected an SQS batch or an EventBridge event"):
        module.handler({"hello": "world"}, CONTEXT)
