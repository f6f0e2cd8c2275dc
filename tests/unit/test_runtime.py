"""The container runtime: how metric points become EMF records, skipped events, and what it wires."""

from __future__ import annotations

import pytest

from autoscaler import runtime
from autoscaler.metrics import SKIPPED_EVENTS, MetricPoint
from autoscaler.providers.aws.deadletters import SqsDeadLetters
from autoscaler.settings import Settings
from tests.support.memory_cluster import MemoryCluster
from tests.support.metrics import emf_records


@pytest.fixture
def tools(monkeypatch: pytest.MonkeyPatch) -> runtime.Powertools:
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "true")
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "Tests")
    powertools = runtime.powertools("unit")
    powertools.metrics.clear_metrics()  # Powertools shares metrics between instances of a namespace
    return powertools


def test_points_with_dimensions_are_published_under_the_service_alone_and_with_theirs(
    tools: runtime.Powertools, capsys: pytest.CaptureFixture[str]
) -> None:
    tools.publish(
        [
            MetricPoint("plain", 2),
            MetricPoint("duration_seconds", 1.5, "Seconds", (("nodepool", "a"),)),
            MetricPoint("duration_seconds", 2.5, "Seconds", (("nodepool", "a"),)),
            MetricPoint("count_total", 1, dimensions=(("nodepool", "a"),)),
            MetricPoint("count_total", 1, dimensions=(("nodepool", "b"), ("capacity_type", ""))),
        ]
    )
    records = emf_records(capsys.readouterr().out)  # the dimensioned ones, at once
    assert [(r["nodepool"], r.get("duration_seconds"), r["count_total"]) for r in records] == [
        ("a", [1.5, 2.5], [1.0]),  # one record per set of dimensions, a list of values per name
        ("b", None, [1.0]),  # an empty dimension value is dropped: CloudWatch refuses it
    ]
    for record in records:
        directive = record["_aws"]["CloudWatchMetrics"][0]
        assert directive["Namespace"] == "Tests" and record["service"] == "unit"
        assert directive["Dimensions"] == [["service"], ["service", "nodepool"]]
    assert {m["Name"]: m["Unit"] for m in records[0]["_aws"]["CloudWatchMetrics"][0]["Metrics"]} == {
        "duration_seconds": "Seconds",
        "count_total": "Count",
    }

    tools.metrics.flush_metrics()  # what log_metrics does at the end of the invocation
    (invocation,) = emf_records(capsys.readouterr().out)
    assert invocation["plain"] == [2.0] and invocation["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["service"]]


def test_a_skipped_event_is_logged_and_counted(
    tools: runtime.Powertools, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    tools.skip("not ours", source="elsewhere")
    tools.metrics.flush_metrics()
    (logged,) = caplog.records
    assert logged.getMessage() == "skipped: not ours" and logged.source == "elsewhere"  # type: ignore[attr-defined]
    assert logged.funcName == "test_a_skipped_event_is_logged_and_counted"  # where the handler skipped
    assert emf_records(capsys.readouterr().out)[0][SKIPPED_EVENTS] == [1.0]


@pytest.mark.parametrize("dlq", ["", "https://sqs.us-west-2.amazonaws.com/111122223333/interruption-dlq"])
def test_the_dead_letter_queue_is_wired_when_its_url_is_set(dlq: str) -> None:
    settings = Settings(cluster_name="unit", region="us-west-2", interruption_dlq_url=dlq)
    built = runtime.Runtime.build(settings, cluster=MemoryCluster())  # type: ignore[arg-type]
    assert isinstance(built.dead_letters, SqsDeadLetters) is bool(dlq)
    assert built.dead_letters is None or built.dead_letters.queue_url == dlq
