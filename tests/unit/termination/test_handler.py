"""The termination handler: both triggers run one sweep; bad events are skipped and counted; metrics are EMF."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from autoscaler import metrics as shared_metrics
from autoscaler.controllers.termination import TerminationController
from autoscaler.kube.port import ObjectRef
from tests.support.functions import load_handler
from tests.unit.termination.doubles import FakeCloud, FakeCluster, node, nodeclaim

EVENTS = Path(__file__).parents[3] / "events" / "forwarder"
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


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[ModuleType, FakeCluster, FakeCloud]]:
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "true")
    module = load_handler("termination")
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


def forwarder_event(name: str) -> dict[str, Any]:
    sample = json.loads((EVENTS / "nodeclaim-deleting.json").read_text())
    sample["detail"]["object"]["name"] = name
    return dict(sample)


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


def test_a_forwarder_event_runs_the_same_sweep_and_counts_released_nodeclaims(
    world: tuple[ModuleType, FakeCluster, FakeCloud], capsys: pytest.CaptureFixture[str]
) -> None:
    module, cluster, _ = world
    result = module.handler(forwarder_event("default-a"), Context())
    assert result["trigger"] == "NodeClaim Deleting default-a"
    assert result["sweep"]["finished"] == 1 and cluster.nodeclaim_objects == {}
    summary = [r for r in emf_records(capsys.readouterr().out) if shared_metrics.NODECLAIMS_TERMINATED in r]
    assert (
        summary and summary[0][shared_metrics.NODECLAIMS_TERMINATED] == [1.0] and summary[0]["service"] == "termination"
    )


def test_a_sweep_near_the_end_of_the_invocation_defers_its_work(
    world: tuple[ModuleType, FakeCluster, FakeCloud],
) -> None:
    module, cluster, _ = world
    result = module.handler(scheduled_event(), Context(remaining_ms=5_000))
    assert (result["sweep"]["deferred"], result["sweep"]["finished"]) == (1, 0) and cluster.nodeclaim_objects


@pytest.mark.parametrize(
    "event",
    [
        {"hello": "world"},
        {**scheduled_event(), "source": "serverless-karpenter.forwarder", "detail": {"version": "2"}},
        {**scheduled_event(), "detail-type": "EC2 Spot Instance Interruption Warning"},
    ],
    ids=["not-eventbridge", "unknown-detail-version", "other-detail-type"],
)
def test_events_we_cannot_read_are_skipped_and_counted_without_a_sweep(
    world: tuple[ModuleType, FakeCluster, FakeCloud], capsys: pytest.CaptureFixture[str], event: dict[str, Any]
) -> None:
    module, cluster, _ = world
    assert module.handler(event, Context()) == {"skipped": True}
    assert cluster.nodeclaim_objects  # nothing was done
    assert any("SkippedEvents" in r for r in emf_records(capsys.readouterr().out))
