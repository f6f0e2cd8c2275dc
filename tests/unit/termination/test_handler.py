"""The termination handler: both triggers run one sweep; bad events are skipped and counted; metrics are EMF."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from autoscaler.controllers.termination import TerminationController
from autoscaler.kube.port import ObjectRef
from tests.unit.termination.doubles import FakeCloud, FakeCluster, node, nodeclaim

HANDLER = Path(__file__).parents[3] / "functions" / "termination" / "handler.py"
T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


@dataclass
class Context:
    function_name: str = "termination"
    memory_limit_in_mb: int = 512
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:termination"
    aws_request_id: str = "req-1"
    remaining_ms: int = 300_000

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


def load_handler() -> ModuleType:
    os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
    spec = importlib.util.spec_from_file_location("termination_handler_under_test", HANDLER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # as Lambda's import would: pydantic resolves annotations through it
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def world() -> Iterator[tuple[ModuleType, FakeCluster, FakeCloud]]:
    module = load_handler()
    cluster, cloud = FakeCluster(clock=lambda: T0), FakeCloud()
    cloud.launch("aws:///us-east-1a/i-a")
    cluster.add(nodeclaim(), node())
    cluster.delete(ObjectRef("NodeClaim", "default-a"))
    module.controller_factory = lambda: TerminationController(
        cluster, cloud, clock=lambda: T0, metrics=module.PowertoolsMetricSink()
    )
    yield module, cluster, cloud


def scheduled_event() -> dict[str, Any]:
    return {
        "version": "0",
        "id": "53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa",
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": "123456789012",
        "time": "2026-11-30T12:00:00Z",
        "region": "us-east-1",
        "resources": ["arn:aws:events:us-east-1:123456789012:rule/termination-sweep"],
        "detail": {},
    }


def sqs_event(*bodies: str) -> dict[str, Any]:
    records = [
        {
            "messageId": f"m-{i}",
            "receiptHandle": "h",
            "body": body,
            "attributes": {
                "ApproximateReceiveCount": "1",
                "SentTimestamp": "1700000000000",
                "SenderId": "x",
                "ApproximateFirstReceiveTimestamp": "1700000000000",
            },
            "messageAttributes": {},
            "md5OfBody": "0",
            "eventSource": "aws:sqs",
            "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:termination",
            "awsRegion": "us-east-1",
        }
        for i, body in enumerate(bodies)
    ]
    return {"Records": records}


def emf_records(output: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in output.splitlines() if line.startswith("{") and "_aws" in line]


def test_the_schedule_runs_a_sweep_and_emits_karpenters_metrics(
    world: tuple[ModuleType, FakeCluster, FakeCloud], capsys: pytest.CaptureFixture[str]
) -> None:
    module, cluster, cloud = world
    result = module.handler(scheduled_event(), Context())
    assert result["sweep"]["finished"] == 1 and cluster.nodeclaim_objects == {}
    assert cloud.states["aws:///us-east-1a/i-a"] == "shutting-down"
    records = emf_records(capsys.readouterr().out)
    terminated = [r for r in records if "karpenter_nodes_terminated_total" in r]
    assert terminated and terminated[0]["nodepool"] == "default" and terminated[0]["reason"] == "Drained"
    assert terminated[0]["_aws"]["CloudWatchMetrics"][0]["Namespace"] == module.NAMESPACE


def test_queued_cluster_events_run_the_same_sweep_and_malformed_ones_are_skipped(
    world: tuple[ModuleType, FakeCluster, FakeCloud], capsys: pytest.CaptureFixture[str]
) -> None:
    module, cluster, _ = world
    valid = {**scheduled_event(), "source": "serverless-karpenter.forwarder", "detail-type": "NodeClaim"}
    valid["detail"] = {"name": "default-a"}
    result = module.handler(sqs_event(json.dumps(valid), "not json", json.dumps({"source": "elsewhere"})), Context())
    assert result["batchItemFailures"] == []  # nothing to retry: the sweep did the work
    assert result["sweep"]["finished"] == 1 and cluster.nodeclaim_objects == {}
    skipped = [r for r in emf_records(capsys.readouterr().out) if "SkippedEvents" in r]
    assert skipped and skipped[0]["SkippedEvents"] == [1.0, 1.0]


def test_a_sweep_near_the_end_of_the_invocation_defers_its_work(
    world: tuple[ModuleType, FakeCluster, FakeCloud],
) -> None:
    module, cluster, _ = world
    result = module.handler(scheduled_event(), Context(remaining_ms=5_000))
    assert (result["sweep"]["deferred"], result["sweep"]["finished"]) == (1, 0) and cluster.nodeclaim_objects


@pytest.mark.filterwarnings("ignore:No application metrics")
def test_an_unknown_event_is_a_clear_error(world: tuple[ModuleType, FakeCluster, FakeCloud]) -> None:
    module, _, _ = world
    with pytest.raises(ValueError, match="expected an SQS batch of cluster events or a scheduled event"):
        module.handler({"hello": "world"}, Context())
