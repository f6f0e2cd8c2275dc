"""The termination function end to end: its real handler and adapters, Kubernetes as the API emulator over
HTTP and EC2 as moto over HTTP. Time is injected, and shared by the controller and the emulator."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from autoscaler import runtime
from autoscaler.apis.v1 import labels as wk
from autoscaler_dev.harness import InvocationDied
from autoscaler_dev.world.aws_world import AWSWorld
from tests.functional.termination.world import TerminationWorld, scheduled_event

DO_NOT_DISRUPT = {wk.ANNOTATION_DO_NOT_DISRUPT: "true"}


@pytest.fixture
def world(aws_world: AWSWorld, monkeypatch: pytest.MonkeyPatch) -> Iterator[TerminationWorld]:
    with TerminationWorld.start(aws_world, monkeypatch) as world:
        yield world


def test_a_pdb_allowing_one_disruption_is_never_violated_and_the_drain_ends_as_pods_reschedule(
    world: TerminationWorld,
) -> None:
    world.node_with_claim("web", pods=[world.pod(f"web-{i}", labels={"app": "web"}) for i in range(3)])
    world.kube.create(world.pdb("web", {"app": "web"}, max_unavailable=1, expected=3))
    world.delete_nodeclaim("web")

    invocations = 0
    while world.kube.get("karpenter.sh/v1", "NodeClaim", "web") is not None:
        result = world.invoke(scheduled_event())
        invocations += 1
        assert world.healthy({"app": "web"}) >= 2, f"the PDB was violated after invocation {invocations}"
        progress = result["sweep"]["progress"]
        assert all(p["evicted"] <= 1 for p in progress)
        world.reschedule_evicted({"app": "web"}, onto="node-elsewhere")
        world.tick(60)
        assert invocations < 8, progress
    assert invocations == 4  # one eviction per rescheduled replica, then the instance goes
    assert world.kube.requests.get("DELETE pods", 0) == 0  # evictions only: the budget was never bypassed
    assert world.kube.get("v1", "Node", "node-web") is None
    assert world.instance_state("web") == "terminated"
    reasons = {e["reason"] for e in world.kube.list("events.k8s.io/v1", "Event", "default")}
    assert {"Evicted", "FailedDraining"} <= reasons
    assert world.metric("karpenter_nodes_eviction_requests_total", code="429")
    assert world.metric("karpenter_nodes_terminated_total", reason="Drained", nodepool="default") == [1.0]


def test_a_do_not_disrupt_pod_is_deleted_at_the_deadline_minus_its_grace_period_not_before(
    world: TerminationWorld,
) -> None:
    batch = world.pod("batch", annotations=DO_NOT_DISRUPT, grace=120)
    world.node_with_claim("batch", pods=[batch], grace="10m")
    world.delete_nodeclaim("batch")

    world.invoke(scheduled_event())
    claim = world.kube.get("karpenter.sh/v1", "NodeClaim", "batch")
    assert claim is not None
    assert claim["metadata"]["annotations"][wk.ANNOTATION_TERMINATION_TIMESTAMP] == "2026-11-30T12:10:00Z"
    for offset in (60, 300, 479):  # up to one second before deadline - 120 s
        world.set_time(offset)
        assert world.invoke(scheduled_event())["sweep"]["progress"][0]["stage"] == "Draining"
        assert world.kube.get("v1", "Pod", "batch") is not None
    assert world.kube.requests.get("POST pods", 0) == 0  # never evicted: do-not-disrupt holds until then

    world.set_time(480)
    assert world.invoke(scheduled_event())["sweep"]["progress"][0]["deleted_at_deadline"] == 1
    assert world.kube.get("v1", "Pod", "batch") is None
    assert world.metric("karpenter_pods_deleted_at_termination_deadline_total") == [1.0]
    world.set_time(490)
    assert world.invoke(scheduled_event())["sweep"]["finished"] == 1
    assert world.kube.get("karpenter.sh/v1", "NodeClaim", "batch") is None
    assert world.metric("karpenter_nodes_terminated_total", reason="Drained") == [1.0]


@pytest.mark.filterwarnings("ignore:No application metrics")  # the killed invocation flushed none
def test_an_invocation_that_dies_mid_drain_is_resumed_by_the_next(world: TerminationWorld) -> None:
    world.node_with_claim("crash", pods=[world.pod(f"app-{i}") for i in range(4)] + [world.pod("logs", daemon=True)])
    world.delete_nodeclaim("crash")
    world.die_after_evictions(2)  # Lambda kills the invocation (timeout) after two evictions went through

    with pytest.raises(InvocationDied, match="invocation died"):
        world.invoke(scheduled_event())
    assert len(world.pods_on("node-crash")) == 3  # two evicted, then nothing more

    world.new_execution_environment()  # the next invocation starts from scratch
    result = world.invoke(world.forwarder_event("NodeClaim", "crash"))
    assert result["trigger"] == "NodeClaim Deleting crash"
    assert [p.split("/")[-1] for p in world.pods_on("node-crash")] == ["logs"]  # workloads first
    world.tick(30)
    world.invoke(scheduled_event())  # the daemon goes once the workloads are gone
    world.tick(30)
    assert world.invoke(scheduled_event())["sweep"]["finished"] == 1
    assert world.kube.get("karpenter.sh/v1", "NodeClaim", "crash") is None
    assert world.kube.get("v1", "Node", "node-crash") is None
    assert world.instance_state("crash") == "terminated"


def test_an_instance_terminated_outside_our_control_finishes_at_once(world: TerminationWorld) -> None:
    world.node_with_claim("gone", pods=[world.pod("guarded", annotations=DO_NOT_DISRUPT)])
    world.node_with_claim("unregistered", pods=[], registered=False)
    world.delete_nodeclaim("gone")
    assert world.invoke(scheduled_event())["sweep"]["progress"][0]["stage"] == "Draining"

    world.terminate_outside("gone")  # a user, or a spot reclaim
    world.terminate_outside("unregistered")
    world.delete_nodeclaim("unregistered")
    world.node_not_ready("node-gone")  # the node lifecycle controller notices the kubelet is gone
    world.tick(40)
    result = world.invoke(scheduled_event())
    assert {p["nodeclaim"]: p["stage"] for p in result["sweep"]["progress"]} == {
        "gone": "Finished",
        "unregistered": "Finished",
    }
    assert world.kube.get("karpenter.sh/v1", "NodeClaim", "gone") is None
    assert world.kube.get("v1", "Node", "node-gone") is None
    assert world.metric("karpenter_nodes_terminated_total", reason="InstanceGone") == [1.0]


def test_termination_waits_until_ec2_reports_the_instance_shutting_down(world: TerminationWorld) -> None:
    world.node_with_claim("slow", pods=[])
    world.delete_nodeclaim("slow")
    world.ec2_lags_behind("slow")  # EC2 accepted TerminateInstances but still describes it running
    assert world.invoke(scheduled_event())["sweep"]["progress"][0]["stage"] == "AwaitingInstanceTermination"
    node = world.kube.get("v1", "Node", "node-slow")
    assert node is not None and node["metadata"]["finalizers"] == [wk.FINALIZER_TERMINATION]
    claim = world.kube.get("karpenter.sh/v1", "NodeClaim", "slow")
    assert claim is not None and any(
        c["type"] == "InstanceTerminating" and c["status"] == "True" for c in claim["status"]["conditions"]
    )
    world.ec2_reports("slow", "shutting-down")
    world.tick(5)
    assert world.invoke(scheduled_event())["sweep"]["finished"] == 1
    assert world.kube.get("karpenter.sh/v1", "NodeClaim", "slow") is None
    assert world.metric("karpenter_nodeclaims_instance_termination_duration_seconds") == [5.0]


def test_deleting_a_node_deletes_its_nodeclaim_and_terminates_the_instance(world: TerminationWorld) -> None:
    world.node_with_claim("by-node", pods=[world.pod("web")])
    world.kube.delete("v1", "Node", "node-by-node")
    result = world.invoke(world.forwarder_event("Node", "node-by-node"))
    assert result["sweep"]["progress"][0]["evicted"] == 1
    claim = world.kube.get("karpenter.sh/v1", "NodeClaim", "by-node")
    assert claim is not None and claim["metadata"]["deletionTimestamp"]
    world.tick(10)
    assert world.invoke(scheduled_event())["sweep"]["finished"] == 1
    assert world.kube.get("karpenter.sh/v1", "NodeClaim", "by-node") is None
    assert world.instance_state("by-node") == "terminated"


def test_the_sample_events_of_the_forwarder_are_accepted(world: TerminationWorld) -> None:
    for sample in ("nodeclaim-deleting.json", "node-deleting.json"):
        event: dict[str, Any] = json.loads((world.samples / sample).read_text())
        result = world.invoke(event)
        assert result["trigger"].startswith(event["detail-type"]) and result["sweep"]["terminating"] == 0


def test_a_cold_container_builds_its_runtime_without_reading_ec2nodeclasses(world: TerminationWorld) -> None:
    world.node_with_claim("cold", pods=[], registered=False)
    world.delete_nodeclaim("cold")
    world.ec2_lags_behind("cold")  # so the sweep asks EC2 about the instance
    runtime.install(None)  # the handler builds the container's runtime from its environment, with the real clock
    assert world.invoke(scheduled_event())["sweep"]["progress"][0]["stage"] == "AwaitingInstanceTermination"
    assert not [request for request in world.kube.requests if "ec2nodeclasses" in request]  # nor DescribeInstanceTypes
