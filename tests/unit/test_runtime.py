"""The container runtime and the functions' Powertools: how metric points become EMF records, skipped events, and
what the composition root wires."""

from __future__ import annotations

import pytest

from autoscaler import runtime
from autoscaler.apis.v1.ec2nodeclass import EC2NodeClass
from autoscaler.apis.v1.nodepool import NodePool
from autoscaler.cloudprovider.errors import NodeClassNotReadyError
from autoscaler.controllers.batch_skip import InMemoryLastPass
from autoscaler.metrics import SKIPPED_EVENTS, MetricPoint
from autoscaler.powertools import Powertools, powertools
from autoscaler.providers.aws.deadletters import SqsDeadLetters
from autoscaler.providers.aws.provider import AWSCloudProvider
from autoscaler.settings import Settings
from tests.support.kube import nodeclass, nodepool
from tests.support.memory_cluster import MemoryCluster
from tests.support.metrics import emf_records


@pytest.fixture
def tools(monkeypatch: pytest.MonkeyPatch) -> Powertools:
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "true")
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "Tests")
    tools = powertools("unit")
    tools.metrics.clear_metrics()  # Powertools shares metrics between instances of a namespace
    return tools


def test_points_with_dimensions_are_published_under_the_service_alone_and_with_theirs(
    tools: Powertools, capsys: pytest.CaptureFixture[str]
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
    assert [(r["nodepool"], r.get("duration_seconds"), r.get("count_total")) for r in records] == [
        ("a", [1.5, 2.5], None),  # a name with many values: a record of its own, the values as a list
        ("a", None, [1.0]),  # the single values of a set of dimensions: one record
        ("b", None, [1.0]),  # an empty dimension value is dropped: CloudWatch refuses it
    ]
    for record in records:
        directive = record["_aws"]["CloudWatchMetrics"][0]
        assert directive["Namespace"] == "Tests" and record["service"] == "unit"
        assert directive["Dimensions"] == [["service"], ["service", "nodepool"]]
    units = [{m["Name"]: m["Unit"] for m in r["_aws"]["CloudWatchMetrics"][0]["Metrics"]} for r in records[:2]]
    assert units == [{"duration_seconds": "Seconds"}, {"count_total": "Count"}]

    tools.metrics.flush_metrics()  # what log_metrics does at the end of the invocation
    (invocation,) = emf_records(capsys.readouterr().out)
    assert invocation["plain"] == [2.0] and invocation["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["service"]]


def test_a_long_series_goes_out_in_records_of_at_most_100_values_and_leaves_no_dimension_behind(
    tools: Powertools, capsys: pytest.CaptureFixture[str]
) -> None:
    latencies = [MetricPoint("latency_seconds", n / 10, "Seconds", (("queue", "q"),)) for n in range(250)]
    tools.publish(
        [*latencies, MetricPoint("plain_seconds", 0.5, "Seconds"), MetricPoint("plain_seconds", 1.5, "Seconds")]
    )
    tools.publish([MetricPoint("count_total", 1, dimensions=(("nodepool", "a"),))])
    records = emf_records(capsys.readouterr().out)
    series = [r["latency_seconds"] for r in records if "latency_seconds" in r]
    assert [len(values) for values in series] == [100, 100, 50]
    assert [v for values in series for v in values] == [n / 10 for n in range(250)]
    assert all(r["queue"] == "q" for r in records if "latency_seconds" in r)
    (plain,) = [r for r in records if "plain_seconds" in r]  # no dimensions: out at once too, under service
    assert plain["plain_seconds"] == [0.5, 1.5] and plain["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["service"]]
    (counted,) = [r for r in records if "count_total" in r]
    assert "queue" not in counted  # the series-only set's dimensions were cleared
    assert counted["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["service"], ["service", "nodepool"]]


def test_a_skipped_event_is_logged_and_counted(
    tools: Powertools, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
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
    built = runtime.Runtime.build(settings, cluster=MemoryCluster())
    assert isinstance(built.dead_letters, SqsDeadLetters) is bool(dlq)
    assert built.dead_letters is None or built.dead_letters.queue_url == dlq


def test_the_composition_root_builds_one_bundle_of_adapters_and_one_registry_of_controllers() -> None:
    settings = Settings(cluster_name="unit", region="us-west-2", instance_types=("m5.large",))
    built = runtime.Runtime.build(settings, cluster=MemoryCluster())
    cloud = built.cloud
    assert isinstance(cloud, AWSCloudProvider)
    # The controllers that need an AWS adapter directly get the provider's own: one cache of each kind.
    assert built.nodeclass_resolver is cloud.aws.resolver
    assert built.launch_templates is cloud.aws.launch_templates
    assert built.instance_profiles is cloud.aws.instance_profiles
    assert built.unavailable is cloud.aws.unavailable and built.leases is cloud.aws.leases
    assert isinstance(built.last_pass, InMemoryLastPass)  # no state table: kept in memory
    assert built.controllers is built.controllers  # one registry per runtime ...
    assert built.controllers.disruption is built.controllers.disruption  # ... each controller built once
    assert built.controllers.provisioner is built.controllers.provisioner
    again = runtime.Runtime.build(settings, cluster=MemoryCluster())
    assert again.controllers.disruption is not built.controllers.disruption  # a runtime's own


def test_the_cloud_provider_reads_the_nodeclasses_the_last_pass_read() -> None:
    built = runtime.Runtime.build(Settings(cluster_name="unit", region="us-west-2"), cluster=MemoryCluster())
    pool = NodePool.model_validate(nodepool("default"))
    with pytest.raises(NodeClassNotReadyError, match="does not exist"):  # no pass has read the cluster yet
        built.cloud.instance_types(pool)
    built.nodeclasses.update([EC2NodeClass.model_validate(nodeclass("default", role="nodes"))])
    with pytest.raises(NodeClassNotReadyError, match="is not Ready"):  # found: the class the pass read
        built.cloud.instance_types(pool)
