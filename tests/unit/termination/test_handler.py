"""The termination handler: both triggers run one sweep; bad events are skipped and counted; metrics are EMF."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from autoscaler import metrics, runtime
from autoscaler.events import FORWARDER_SOURCE
from autoscaler.kube.port import ObjectRef
from autoscaler_dev.harness import Context, load_handler
from tests.support.memory_cloud import MemoryCloud
from tests.support.memory_cluster import MemoryCluster
from tests.support.memory_runtime import memory_runtime
from tests.support.metrics import emf_records
from tests.unit.termination.builders import node, nodeclaim

EVENTS = Path(__file__).parents[3] / "events" / "forwarder"
T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
CONTEXT = Context("termination", timeout_seconds=300)


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[ModuleType, MemoryCluster, MemoryCloud]]:
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "true")
    module = load_handler("termination")
    cluster, cloud = MemoryCluster(nodeclaim(), node(), clock=lambda: T0), MemoryCloud("aws:///us-east-1a/i-a")
    cluster.delete(ObjectRef("NodeClaim", "default-a"))
    cluster.writes.clear()
    runtime.install(memory_runtime(cluster, cloud, clock=lambda: T0))
    yield module, cluster, cloud
    runtime.install(None)


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


def test_the_schedule_runs_a_sweep_and_emits_karpenters_metrics(
    world: tuple[ModuleType, MemoryCluster, MemoryCloud], capsys: pytest.CaptureFixture[str]
) -> None:
    module, cluster, cloud = world
    result = module.handler(scheduled_event(), CONTEXT)
    assert result["sweep"]["finished"] == 1 and not cluster.names("NodeClaim")
    assert cloud.states["aws:///us-east-1a/i-a"] == "shutting-down"
    records = emf_records(capsys.readouterr().out)
    terminated = [r for r in records if metrics.NODES_TERMINATED in r]
    assert terminated and terminated[0]["nodepool"] == "default" and terminated[0]["reason"] == "Drained"
    directive = terminated[0]["_aws"]["CloudWatchMetrics"][0]
    assert directive["Namespace"] == module.tools.namespace
    assert directive["Dimensions"] == [["service"], ["service", "nodepool", "reason"]]


def test_a_forwarder_event_runs_the_same_sweep_and_counts_released_nodeclaims(
    world: tuple[ModuleType, MemoryCluster, MemoryCloud], capsys: pytest.CaptureFixture[str]
) -> None:
    module, cluster, _ = world
    result = module.handler(forwarder_event("default-a"), CONTEXT)
    assert result["trigger"] == "NodeClaim Deleting default-a"
    assert result["sweep"]["finished"] == 1 and not cluster.names("NodeClaim")
    (released,) = [r for r in emf_records(capsys.readouterr().out) if metrics.NODECLAIMS_TERMINATED in r]
    assert released[metrics.NODECLAIMS_TERMINATED] == [1.0] and released["service"] == "termination"
    assert ["service"] in released["_aws"]["CloudWatchMetrics"][0]["Dimensions"]  # the dashboard's series


def test_a_sweep_near_the_end_of_the_invocation_defers_its_work(
    world: tuple[ModuleType, MemoryCluster, MemoryCloud],
) -> None:
    module, cluster, _ = world
    result = module.handler(scheduled_event(), Context("termination", timeout_seconds=5))
    assert (result["sweep"]["deferred"], result["sweep"]["finished"]) == (1, 0) and cluster.names("NodeClaim")


@pytest.mark.parametrize(
    "event",
    [
        {"hello": "world"},
        {**scheduled_event(), "source": FORWARDER_SOURCE, "detail": {"version": "2"}},
        {**scheduled_event(), "detail-type": "EC2 Spot Instance Interruption Warning"},
    ],
    ids=["not-eventbridge", "unknown-detail-version", "other-detail-type"],
)
def test_events_we_cannot_read_are_skipped_and_counted_without_a_sweep(
    world: tuple[ModuleType, MemoryCluster, MemoryCloud], capsys: pytest.CaptureFixture[str], event: dict[str, Any]
) -> None:
    module, cluster, cloud = world
    assert module.handler(event, CONTEXT) == {"skipped": True}
    assert not cluster.writes and not cloud.calls  # nothing was done
    assert any(metrics.SKIPPED_EVENTS in r for r in emf_records(capsys.readouterr().out))
