"""Pure parts of provisioning: in-flight estimates, event throttling, pod startup times."""

from __future__ import annotations

from datetime import timedelta

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.nodeclaim import NodeClaim, NodeClaimStatus
from autoscaler.controllers.provisioner_pass import pod_startup_seconds
from autoscaler.controllers.provisioning.events import NOMINATION_BURST, EventThrottle
from autoscaler.controllers.state.inflight import NOMINATED_PODS, estimated, in_flight, is_unlaunched, nomination
from tests.unit.controllers.lifecycle_doubles import NOW, nodeclaim
from tests.unit.controllers.provisioning_doubles import CATALOGUE, pending_pod


def test_an_unlaunched_nodeclaim_counts_its_requests_and_its_largest_option() -> None:
    claim = nodeclaim(
        "new",
        requirements=[
            {"key": wk.LABEL_INSTANCE_TYPE, "operator": "In", "values": ["m5.large", "m5.xlarge"]},
            {"key": wk.LABEL_ZONE, "operator": "In", "values": ["us-west-2b"]},
            {"key": wk.LABEL_CAPACITY_TYPE, "operator": "In", "values": ["spot", "on-demand"]},
        ],
    )
    assert is_unlaunched(claim)
    guess = estimated(claim, CATALOGUE)
    assert guess.status.allocatable == {"cpu": "1", "memory": "1Gi"}  # its requests: any option holds them
    assert guess.status.capacity["cpu"] == "4" and guess.status.capacity["memory"] == "16Gi"  # m5.xlarge
    assert guess.metadata.labels[wk.LABEL_ZONE] == "us-west-2b"  # pinned by a single value
    assert wk.LABEL_CAPACITY_TYPE not in guess.metadata.labels  # two values: not pinned
    assert guess.status.provider_id == "inflight:///uid-new"


def with_pods(claim: NodeClaim, *uids: str, **status: object) -> NodeClaim:
    annotations = {**(claim.metadata.annotations or {}), NOMINATED_PODS: nomination(uids)}
    return claim.model_copy(
        update={
            "metadata": claim.metadata.model_copy(update={"annotations": annotations}),
            "status": NodeClaimStatus.model_validate(status) if status else None,
        }
    )


def test_pods_are_held_on_the_nodeclaim_they_were_created_for_until_their_nomination_lapses() -> None:
    pending = [pending_pod("a"), pending_pod("b"), pending_pod("c"), pending_pod("d")]
    launching = with_pods(nodeclaim("launching"), "uid-a", "uid-gone")  # not launched: a stand-in node
    joined = with_pods(nodeclaim("joined"), "uid-b", providerID="aws:///z/i-1")  # its Node is there
    done = with_pods(
        nodeclaim("done"),
        "uid-c",
        providerID="aws:///z/i-2",
        conditions=[{"type": "Initialized", "status": "True", "lastTransitionTime": "2026-11-30T11:00:00Z"}],
    )
    fresh = with_pods(  # initialized a minute ago: the kube-scheduler has not bound its pod yet
        nodeclaim("fresh"),
        "uid-d",
        providerID="aws:///z/i-3",
        conditions=[{"type": "Initialized", "status": "True", "lastTransitionTime": "2026-11-30T11:59:00Z"}],
    )
    node = {"metadata": {"name": "ip-1"}, "spec": {"providerID": "aws:///z/i-1"}}
    node_2 = {"metadata": {"name": "ip-2"}, "spec": {"providerID": "aws:///z/i-2"}}
    node_3 = {"metadata": {"name": "ip-3"}, "spec": {"providerID": "aws:///z/i-3"}}
    flight = in_flight(
        [launching, joined, done, fresh], [node, node_2, node_3], pending, {"default": CATALOGUE}, now=NOW
    )
    held = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in flight.held}
    assert held == {"a": "launching", "b": "ip-1", "d": "ip-3"}
    assert [p["metadata"]["name"] for p in flight.pending] == ["c"]  # its nomination lapsed: scheduled again
    assert flight.stand_ins == {"launching"}
    (stand_in,) = flight.nodes
    assert stand_in["metadata"]["labels"][wk.LABEL_HOSTNAME] == "launching"
    assert stand_in["spec"]["providerID"] == "inflight:///uid-launching"
    assert stand_in["status"]["allocatable"] == {"cpu": "1", "memory": "1Gi"}


def test_a_deleting_nodeclaim_holds_nothing() -> None:
    claim = with_pods(nodeclaim("going"), "uid-a")
    going = claim.model_copy(
        update={"metadata": claim.metadata.model_copy(update={"deletion_timestamp": "2026-11-30T11:00:00Z"})}
    )
    flight = in_flight([going], [], [pending_pod("a")], {}, now=NOW)
    assert flight.held == [] and flight.nodes == [] and len(flight.pending) == 1
    assert not is_unlaunched(NodeClaim.model_validate({**going.to_dict(), "status": {"providerID": "aws:///z/i"}}))


def test_nominations_are_a_token_bucket_and_failures_once_per_pod() -> None:
    now = [0.0]
    throttle = EventThrottle(clock=lambda: now[0])
    assert sum(throttle.nomination() for _ in range(50)) == NOMINATION_BURST
    now[0] += 1.0
    assert sum(throttle.nomination() for _ in range(50)) == 5
    assert throttle.failure("a") and not throttle.failure("a") and throttle.failure("b")
    now[0] += 301
    assert throttle.failure("a")


def pod(name: str, node: str, created: str, ready_at: str | None) -> dict[str, object]:
    conditions = [{"type": "Ready", "status": "True", "lastTransitionTime": ready_at}] if ready_at else []
    return {
        "metadata": {"name": name, "creationTimestamp": created},
        "spec": {"nodeName": node},
        "status": {"conditions": conditions},
    }


def test_pod_startup_counts_pods_on_karpenters_nodes_that_became_ready_in_the_window() -> None:
    nodes = [
        {"metadata": {"name": "ours", "labels": {wk.LABEL_NODEPOOL: "default"}}},
        {"metadata": {"name": "theirs", "labels": {}}},
    ]
    since, until = NOW - timedelta(seconds=60), NOW
    pods = [
        pod("counted", "ours", "2026-11-30T11:58:00Z", "2026-11-30T11:59:30Z"),
        pod("earlier-pass", "ours", "2026-11-30T11:50:00Z", "2026-11-30T11:58:30Z"),
        pod("other-node", "theirs", "2026-11-30T11:58:00Z", "2026-11-30T11:59:30Z"),
        pod("not-ready", "ours", "2026-11-30T11:58:00Z", None),
    ]
    assert pod_startup_seconds(pods, nodes, since, until) == [90.0]
    assert pod_startup_seconds(pods, nodes, None, until) == []
