"""What the forwarder forwards: change detection per kind, coalescing, lease decisions, batching. No network."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from autoscaler.forwarder.changes import BusEvent, ChangeTracker, Coalescer
from autoscaler.forwarder.lease import Observation, claimed_spec, may_take, released_spec
from autoscaler.forwarder.publisher import EventBridgePublisher
from tests.support.kube import node, nodeclaim, nodepool, pod

NOW = datetime(2024, 1, 1, tzinfo=UTC)


def tracker(kind: str) -> ChangeTracker:
    return ChangeTracker(kind, "demo", clock=lambda: NOW)


def types(events: list[BusEvent]) -> list[str]:
    return [e.detail_type for e in events]


def with_meta(obj: dict[str, Any], **metadata: Any) -> dict[str, Any]:
    return {**obj, "metadata": {**obj["metadata"], **metadata}}


def test_pods_forward_becoming_unschedulable_and_freeing_capacity() -> None:
    pods = tracker("Pod")
    assert types(pods.observe("ADDED", pod("p", phase="Pending", ready=False))) == []
    assert types(pods.observe("MODIFIED", pod("p", unschedulable=True))) == ["Pod Unschedulable"]
    assert types(pods.observe("MODIFIED", pod("p", unschedulable=True))) == []  # still pending: said already
    assert types(pods.observe("MODIFIED", pod("p", node="n1"))) == []
    freed = pods.observe("MODIFIED", pod("p", node="n1", phase="Succeeded"))
    assert types(freed) == ["Pod Capacity Freed"] and freed[0].detail["reason"] == "Succeeded"
    assert types(pods.observe("DELETED", pod("p", node="n1", phase="Succeeded"))) == []  # freed already
    deleted = pods.observe("DELETED", pod("q", node="n2"))
    assert types(deleted) == ["Pod Capacity Freed"] and deleted[0].detail["nodeName"] == "n2"
    assert types(pods.observe("ADDED", pod("d", unschedulable=True, owner_kind="DaemonSet"))) == []


def test_karpenter_kinds_forward_lifecycle_and_meaningful_updates() -> None:
    claims = tracker("NodeClaim")
    created = claims.observe("ADDED", nodeclaim("nc"))
    assert types(created) == ["NodeClaim Created"]
    assert created[0].detail == {
        "version": "1",
        "cluster": "demo",
        "change": "Created",
        "observedAt": "2024-01-01T00:00:00.000000Z",
        "object": {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodeClaim",
            "name": "nc",
            "labels": {"karpenter.sh/nodepool": "default"},
        },
        "nodePool": "default",
    }
    launched = {
        **nodeclaim("nc"),
        "status": {"conditions": [{"type": "Launched", "status": "True", "lastTransitionTime": "t1"}]},
    }
    assert types(claims.observe("MODIFIED", launched)) == ["NodeClaim Updated"]
    relaunched = {
        **launched,
        "status": {"conditions": [{"type": "Launched", "status": "True", "lastTransitionTime": "t2"}]},
    }
    assert types(claims.observe("MODIFIED", relaunched)) == []  # a timestamp is not a change
    assert types(claims.observe("MODIFIED", with_meta(relaunched, deletionTimestamp="2024-01-01T00:00:00Z"))) == [
        "NodeClaim Deleting"
    ]
    assert types(claims.observe("DELETED", relaunched)) == ["NodeClaim Deleted"]
    pools = tracker("NodePool")
    pools.observe("ADDED", nodepool("p"))
    assert (
        types(pools.observe("MODIFIED", {**nodepool("p"), "status": {"resources": {"cpu": "4"}}})) == []
    )  # our own writes
    nodes = tracker("Node")
    nodes.observe("ADDED", node("n"))
    assert types(nodes.observe("MODIFIED", {**node("n"), "spec": {**node("n")["spec"], "unschedulable": True}})) == [
        "Node Updated"
    ]


def test_resync_after_a_relist_reports_what_was_missed() -> None:
    claims = tracker("NodeClaim")
    initial = claims.resync([nodeclaim("a"), with_meta(nodeclaim("b"), deletionTimestamp="t")], initial=True)
    assert types(initial) == ["NodeClaim Deleting"]  # existing objects are not "Created" on start-up
    later = claims.resync([nodeclaim("c"), with_meta(nodeclaim("b"), deletionTimestamp="t")], initial=False)
    assert sorted((e.detail_type, e.detail["object"]["name"]) for e in later) == [
        ("NodeClaim Created", "c"),
        ("NodeClaim Deleted", "a"),
    ]


def test_coalescer_sends_a_first_change_at_once_and_the_latest_of_a_burst_once_per_window() -> None:
    claims = tracker("NodeClaim")
    coalescer = Coalescer(window=1.0)

    def tainted(*keys: str) -> dict[str, Any]:
        taints = [{"key": key, "effect": "NoSchedule"} for key in keys]
        return {**nodeclaim("nc"), "spec": {**nodeclaim("nc")["spec"], "taints": taints}}

    coalescer.add(claims.observe("ADDED", nodeclaim("nc")), now=10.0)
    assert types(coalescer.due(now=10.0)) == ["NodeClaim Created"]  # no window before the first change
    coalescer.add(claims.observe("MODIFIED", tainted()), now=10.2)
    assert types(coalescer.due(now=10.2)) == ["NodeClaim Updated"]  # the first of its detail type: at once too
    coalescer.add(claims.observe("MODIFIED", tainted("a")), now=10.5)
    latest = claims.observe("MODIFIED", tainted("a", "b"))
    coalescer.add(latest, now=10.7)
    assert coalescer.due(now=11.1) == [] and len(coalescer) == 1  # held: one went within the window
    assert coalescer.due(now=11.2) == latest  # a window after the last send, the latest only
    coalescer.add(claims.observe("MODIFIED", tainted("c")), now=13.0)
    assert types(coalescer.due(now=13.0)) == ["NodeClaim Updated"]  # a window after the last send: at once
    coalescer.add(claims.observe("MODIFIED", tainted("d")), now=13.1)
    assert types(coalescer.due(now=13.1, everything=True)) == ["NodeClaim Updated"]  # shutting down: all of it


def test_lease_decisions() -> None:
    observed = Observation()
    lease = {"metadata": {"resourceVersion": "1"}, "spec": claimed_spec(None, "a", 15, 100.0)}
    observed.update(lease, now=100.0)
    assert may_take(lease, observed, "a", 101.0) and not may_take(lease, observed, "b", 110.0)
    assert may_take(lease, observed, "b", 115.0)  # not renewed for a whole duration, on our clock
    taken = claimed_spec(lease, "b", 15, 115.0)
    assert taken["leaseTransitions"] == 1 and taken["acquireTime"] != lease["spec"]["acquireTime"]
    renewed = claimed_spec({"spec": taken}, "b", 15, 117.0)
    assert renewed["acquireTime"] == taken["acquireTime"] and renewed["leaseTransitions"] == 1
    released = {"metadata": {"resourceVersion": "9"}, "spec": released_spec({"spec": renewed}, 118.0)}
    assert may_take(released, observed, "a", 118.0)


class FlakyEventBridge:
    """PutEvents that fails the first entry of each call once: the partial failures EventBridge reports."""

    def __init__(self) -> None:
        self.calls: list[list[dict[str, Any]]] = []
        self.failed: set[str] = set()

    def put_events(self, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        self.calls.append(Entries)
        results = []
        for index, entry in enumerate(Entries):
            if index == 0 and entry["Detail"] not in self.failed:
                self.failed.add(entry["Detail"])
                results.append({"ErrorCode": "InternalFailure", "ErrorMessage": "try again"})
            else:
                results.append({"EventId": "id"})
        return {"FailedEntryCount": 1, "Entries": results}


def test_publisher_batches_by_ten_and_retries_failed_entries() -> None:
    claims = tracker("NodeClaim")
    events = [e for i in range(23) for e in claims.observe("ADDED", nodeclaim(f"nc{i}"))]
    client = FlakyEventBridge()
    publisher = EventBridgePublisher(client, "bus", sleep=lambda _: None)
    publisher.publish(events)
    assert [len(c) for c in client.calls] == [10, 1, 10, 1, 3, 1]
    assert publisher.stats.sent == 23 and publisher.stats.dropped == 0
    assert {e["Source"] for c in client.calls for e in c} == {"serverless-karpenter.forwarder"}
