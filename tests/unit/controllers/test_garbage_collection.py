"""The garbage collection pass over in-memory Kubernetes and cloud ports: what it removes, what it keeps, the
lease, isolation of failures, the time budget, events and metrics."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest

from autoscaler.cloudprovider.errors import TransientCloudError
from autoscaler.cloudprovider.lease import InMemoryLeases
from autoscaler.controllers.garbage_collection import GarbageCollector, Report, metric_points
from autoscaler.controllers.garbage_collection.report import (
    COLLECTED,
    INSTANCE,
    INSTANCE_PROFILE,
    LAUNCH_TEMPLATE,
    NODE,
    NODECLAIM,
)
from autoscaler.kube.port import ClusterError
from autoscaler.metrics import GC_ERRORS, GC_SKIPPED, NODECLAIMS_DISRUPTED, MetricPoint
from autoscaler.settings import GARBAGE_COLLECTION_LEASE
from tests.support.memory_cloud import MemoryCloud
from tests.support.memory_cluster import MemoryCluster
from tests.unit.controllers.garbage_collection_builders import (
    NOW,
    instance,
    node,
    nodeclaim,
    nodeclass,
    pid,
    profile,
    template,
)


def collector(cluster: MemoryCluster, cloud: MemoryCloud, leases: InMemoryLeases | None = None) -> GarbageCollector:
    return GarbageCollector(
        cluster,
        cloud,
        cloud.launch_templates,
        cloud.instance_profiles,
        leases or InMemoryLeases(lambda: NOW),
        clock=lambda: NOW,
    )


def deleting(cluster: MemoryCluster, nodeclaim: str) -> bool:
    stored = cluster.stored("NodeClaim", nodeclaim)
    return stored is not None and bool(stored["metadata"].get("deletionTimestamp"))


def world() -> tuple[MemoryCluster, MemoryCloud]:
    """One of everything: a leaked instance with a Node, a NodeClaim whose instance vanished, one whose instance
    vanished but whose Node is Ready, a healthy pair, a stale and a current launch template, an orphaned and a
    used instance profile."""
    cluster = MemoryCluster(
        nodeclass("default"),
        nodeclaim("healthy", "i-healthy", registered=True),
        nodeclaim("vanished", "i-vanished", registered=True),
        nodeclaim("kubelet-alive", "i-kubelet-alive", registered=True),
        node("leaked-node", "i-leaked", ready=False),
        node("alive-node", "i-kubelet-alive", ready=True),
    )
    cloud = MemoryCloud(
        instance("i-healthy"),
        instance("i-leaked", nodepool="batch"),
        templates=(template("current"), template("old", image="ami-old")),
        profiles=(profile("used", "default"), profile("orphan", "deleted-class")),
    )
    return cluster, cloud


def test_a_pass_removes_what_nothing_accounts_for_and_keeps_the_rest() -> None:
    cluster, cloud = world()
    report = collector(cluster, cloud).run("pass-1")

    assert report.names(INSTANCE) == [pid("i-leaked")] and cloud.terminated == [pid("i-leaked")]
    assert report.names(NODE) == ["leaked-node"] and "leaked-node" not in cluster.names("Node")
    assert report.names(NODECLAIM) == ["vanished"]
    assert deleting(cluster, "vanished")  # termination finishes it
    assert not deleting(cluster, "kubelet-alive") and not deleting(cluster, "healthy")
    assert [k.name for k in report.kept] == ["kubelet-alive"]
    assert report.names(LAUNCH_TEMPLATE) == ["old"] and report.names(INSTANCE_PROFILE) == ["orphan"]
    assert cloud.deleted == ["old", "orphan"]
    assert not report.failures and not report.skipped

    events = {(e.regarding.kind, e.regarding.name, e.reason): e.message for e in cluster.events}
    assert events == {
        ("Node", "leaked-node", "InstanceGarbageCollected"): (
            f"instance {pid('i-leaked')} launched 600s ago and no NodeClaim refers to it: terminated"
        ),
        ("NodeClaim", "vanished", "NodeClaimGarbageCollected"): (
            f"its instance {pid('i-vanished')} no longer exists: NodeClaim deleted"
        ),
        ("EC2NodeClass", "default", "LaunchTemplateGarbageCollected"): (
            "LaunchTemplate old deleted: AMI ami-old is no longer among EC2NodeClass default's AMIs"
        ),
        ("EC2NodeClass", "deleted-class", "InstanceProfileGarbageCollected"): (
            "InstanceProfile orphan deleted: its EC2NodeClass deleted-class is gone"
        ),
    }

    points = metric_points(report)
    assert MetricPoint(COLLECTED[INSTANCE], 1) in points and MetricPoint(COLLECTED[NODECLAIM], 1) in points
    disrupted = [p for p in points if p.name == NODECLAIMS_DISRUPTED]
    assert disrupted == [
        MetricPoint(
            NODECLAIMS_DISRUPTED,
            1,
            dimensions=(("reason", "garbage_collected"), ("nodepool", "default"), ("capacity_type", "on-demand")),
        )
    ]

    again = collector(cluster, cloud).run("pass-2")  # converged: nothing left to do
    assert not again.collected and all(p.value == 0 for p in metric_points(again))


def test_every_removal_is_logged_as_a_decision_with_its_reason(caplog: pytest.LogCaptureFixture) -> None:
    cluster, cloud = world()
    with caplog.at_level(logging.INFO, logger="autoscaler"):  # the fields must not clash with a LogRecord's
        report = collector(cluster, cloud).run("pass-1")
    logged = [
        (r.resource, r.collected, r.reason)  # type: ignore[attr-defined]
        for r in caplog.records
        if getattr(r, "decision", None) == "collected"
    ]
    assert logged == [(c.resource, c.name, c.reason) for c in report.collected] and len(logged) == 5


def test_an_instance_without_a_node_is_reported_on_its_nodepool() -> None:
    cluster, cloud = MemoryCluster(), MemoryCloud(instance("i-lonely", nodepool="batch"))
    collector(cluster, cloud).run("pass")
    assert [(e.regarding.kind, e.regarding.name) for e in cluster.events] == [("NodePool", "batch")]


def test_a_nodeclaim_whose_instance_only_lost_its_tags_is_kept() -> None:
    cluster = MemoryCluster(nodeclaim("untagged", "i-untagged", registered=True))
    cloud = MemoryCloud(pid("i-untagged"))
    cloud.untag(pid("i-untagged"))  # not listed (tags gone), but EC2 still has it
    report = collector(cluster, cloud).run("pass")
    assert not report.collected and not deleting(cluster, "untagged")


def test_a_pass_skips_while_another_holds_the_lease_and_takes_it_once_released_or_expired() -> None:
    cluster, cloud = world()
    clock = {"now": NOW}
    leases = InMemoryLeases(lambda: clock["now"])
    assert leases.acquire(GARBAGE_COLLECTION_LEASE, "other-pass", timedelta(seconds=90))

    skipped = collector(cluster, cloud, leases).run("this-pass")
    assert skipped.skipped and not skipped.collected and not cloud.terminated and not cloud.deleted
    assert metric_points(skipped) == [MetricPoint(GC_SKIPPED, 1)]

    clock["now"] = NOW + timedelta(seconds=91)  # the other pass died holding it
    assert collector(cluster, cloud, leases).run("this-pass").collected
    assert leases.acquire(GARBAGE_COLLECTION_LEASE, "next-pass", timedelta(seconds=90))  # released at the end


def test_a_failed_listing_or_action_stops_only_what_depends_on_it() -> None:
    cluster, cloud = world()
    cloud.fail("list", TransientCloudError("DescribeInstances throttled"))
    report = collector(cluster, cloud).run("pass")
    # Without the instances: no instance or NodeClaim decisions, and no profile deletions (a live instance of
    # a deleted class would keep its profile). Launch templates do not depend on them.
    assert report.names(LAUNCH_TEMPLATE) == ["old"]
    assert not report.names(INSTANCE) and not report.names(NODECLAIM) and not report.names(INSTANCE_PROFILE)
    assert [(f.resource, f.error) for f in report.failures] == [
        (INSTANCE, "TransientCloudError: DescribeInstances throttled")
    ]

    cluster, cloud = world()
    cloud.launch(instance("i-leaked-2"))
    cloud.fail(f"delete:{pid('i-leaked')}", TransientCloudError("TerminateInstances throttled"))
    report = collector(cluster, cloud).run("pass")
    assert report.names(INSTANCE) == [pid("i-leaked-2")]  # the next one still went
    assert report.names(NODE) == []  # the failed instance's Node stays until its instance is terminated
    assert MetricPoint(GC_ERRORS, 1, dimensions=(("resource", INSTANCE),)) in metric_points(report)


def test_a_pass_that_cannot_read_the_cluster_touches_nothing() -> None:
    cluster, cloud = world()

    cluster.fail("list_raw", ClusterError("API server unreachable"))
    report = collector(cluster, cloud).run("pass")
    assert not report.collected and not cloud.terminated and not cloud.deleted
    assert [f.resource for f in report.failures] == ["Cluster"]


def test_no_action_starts_when_the_invocation_is_almost_out_of_time() -> None:
    cluster, cloud = world()
    report = collector(cluster, cloud).run("pass", time_left=lambda: 4.0)
    assert not report.collected and not cloud.terminated and not cloud.deleted
    assert report.deferred == 5  # the instance, both NodeClaims' instance checks, the template, the profile


def test_the_report_as_returned_by_the_handler() -> None:
    cluster, cloud = world()
    summary = collector(cluster, cloud).run("pass").as_dict()
    assert summary["collected"] == {
        "Instance": [pid("i-leaked")],
        "Node": ["leaked-node"],
        "NodeClaim": ["vanished"],
        "LaunchTemplate": ["old"],
        "InstanceProfile": ["orphan"],
    }
    assert Report().as_dict()["failures"] == []
