"""CapacityBuffers: how many chunks (Karpenter's rules), the virtual pods, and the provisioner keeping them: a
NodeClaim for a buffer that fits nowhere, its status, real pods first, no events about virtual pods, and the gate."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from autoscaler.apis.autoscaling import CapacityBuffer
from autoscaler.apis.autoscaling.capacitybuffer import PROVISIONING, READY_FOR_PROVISIONING, is_virtual_pod
from autoscaler.apis.feature_gates import EVENT_REASON
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.cloudprovider.unavailable import InMemoryUnavailableOfferings
from autoscaler.controllers.buffers.demand import (
    POD_TEMPLATE_NOT_FOUND,
    RESOLUTION_FAILED,
    SCALABLE_REF_NOT_FOUND,
    resolve,
    virtual_pods,
)
from autoscaler.controllers.provisioner_pass import PassResult, ProvisionerPass
from autoscaler.controllers.provisioning.events import EventThrottle
from autoscaler.controllers.state.inflight import NOMINATED_PODS, in_flight, nomination
from autoscaler.settings import FeatureGates
from tests.support.memory_cluster import MemoryCluster
from tests.unit.controllers.lifecycle_doubles import NOW, FakeCloud, node, nodeclaim
from tests.unit.controllers.provisioning_doubles import FakeCatalogue, nodepool, pending_pod, ready_nodeclass

ON = FeatureGates(capacity_buffer=True)


@dataclass
class Cloud(FakeCatalogue, FakeCloud):
    """The catalogue for scheduling and the launching cloud for the lifecycle step."""


POD_SPEC = {"containers": [{"name": "app", "resources": {"requests": {"cpu": "1", "memory": "2Gi"}}}]}


def buffer(**spec: Any) -> CapacityBuffer:
    spec = spec or {"podTemplateRef": {"name": "chunk"}, "replicas": 2}
    return CapacityBuffer.model_validate(
        {"metadata": {"name": "web", "namespace": "default", "uid": "uid-buf", "generation": 1}, "spec": spec}
    )


def template(spec: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PodTemplate",
        "metadata": {"name": "chunk", "namespace": "default", "generation": 3},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": spec or POD_SPEC},
    }


def deployment(replicas: int | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"template": {"metadata": {"labels": {"app": "web"}}, "spec": POD_SPEC}}
    if replicas is not None:
        spec["replicas"] = replicas
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": spec,
    }


SCALABLE = {"apiGroup": "apps", "kind": "Deployment", "name": "web"}


@pytest.mark.parametrize(
    ("spec", "scaled", "expected"),
    [
        ({"scalableRef": SCALABLE, "percentage": 25}, 10, 3),  # ceil(2.5)
        ({"scalableRef": SCALABLE, "percentage": 1}, 10, 1),  # at least one
        ({"scalableRef": SCALABLE, "percentage": 50, "replicas": 2}, 10, 5),  # the larger of the two
        ({"scalableRef": SCALABLE, "percentage": 50, "replicas": 7}, 10, 7),
        ({"scalableRef": SCALABLE, "replicas": 9, "limits": {"cpu": "3500m"}}, 1, 3),  # capped by limits
        ({"scalableRef": SCALABLE, "limits": {"memory": "5Gi"}}, 1, 2),  # limits alone
        ({"scalableRef": SCALABLE, "limits": {"nvidia.com/gpu": "4"}, "replicas": 2}, 1, 2),  # limits name nothing
        ({"scalableRef": SCALABLE, "percentage": 50}, None, 1),  # a workload without replicas has one
        ({"scalableRef": SCALABLE, "percentage": 50}, 0, 0),  # nothing scaled, nothing buffered
    ],
)
def test_chunk_count_follows_karpenters_rules(spec: dict[str, Any], scaled: int | None, expected: int) -> None:
    resolution = resolve(buffer(**spec), deployment(scaled))
    assert resolution.resolved and resolution.replicas == expected


def test_a_missing_or_unsupported_reference_is_not_ready_with_its_reason() -> None:
    assert resolve(buffer(), None).reason == POD_TEMPLATE_NOT_FOUND
    assert resolve(buffer(scalableRef=SCALABLE, replicas=1), None).reason == SCALABLE_REF_NOT_FOUND
    job = {"apiGroup": "batch", "kind": "Job", "name": "web"}
    assert resolve(buffer(scalableRef=job, replicas=1), deployment(1)).reason == RESOLUTION_FAILED


def test_virtual_pods_are_the_templates_pod_without_claims_at_the_lowest_priority() -> None:
    spec = {
        **POD_SPEC,
        "nodeName": "somewhere",
        "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "x"}}, {"name": "tmp", "emptyDir": {}}],
        "containers": [{**POD_SPEC["containers"][0], "volumeMounts": [{"name": "data"}, {"name": "tmp"}]}],
    }
    pods = virtual_pods(buffer(), resolve(buffer(), template(spec)))
    assert [p["metadata"]["uid"] for p in pods] == ["uid-buf-1", "uid-buf-2"]  # the same every pass
    first = pods[0]
    assert is_virtual_pod(first) and first["metadata"]["labels"] == {"app": "web"}
    assert "nodeName" not in first["spec"] and first["spec"]["priority"] == -(2**31)
    assert [v["name"] for v in first["spec"]["volumes"]] == ["tmp"]
    assert first["spec"]["containers"][0]["volumeMounts"] == [{"name": "tmp"}]


def _cluster(*objects: Any) -> MemoryCluster:
    return MemoryCluster(nodepool(), ready_nodeclass(), *objects, clock=lambda: NOW)


def _pass(cluster: MemoryCluster, gates: FeatureGates = ON) -> PassResult:
    unavailable = InMemoryUnavailableOfferings()
    throttle = EventThrottle(clock=lambda: 0.0)
    return ProvisionerPass(
        cluster, Cloud(), unavailable, clock=lambda: NOW, throttle=throttle, feature_gates=gates
    ).run()


def _status(cluster: MemoryCluster) -> dict[str, Any]:
    stored = cluster.stored("CapacityBuffer", "web", "default")
    assert stored is not None
    return stored.get("status") or {}


def _reasons(status: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in status.get("conditions") or ()}


def test_a_buffer_that_fits_nowhere_gets_a_nodeclaim_and_says_so() -> None:
    cluster = _cluster(buffer(), template())
    result = _pass(cluster)
    assert len(result.provisioning.created) == 1  # launched for the two chunks alone
    status = _status(cluster)
    assert status["replicas"] == 2 and status["podTemplateRef"] == {"name": "chunk"}
    assert status["podTemplateGeneration"] == 3
    assert _reasons(status) == {
        READY_FOR_PROVISIONING: ("True", "Resolved"),
        PROVISIONING: ("False", "RequiresNewCapacity"),
    }
    assert not cluster.events  # nothing is said about pods that do not exist
    assert result.buffers.provisioned[("default", "web")].new == 2


def _node_with_room(cpu: str) -> dict[str, Any]:
    up = node("ip-1", "aws:///us-west-2a/i-1", taints=[], labels={wk.LABEL_NODEPOOL: "default"})
    up["status"]["allocatable"] = {"cpu": cpu, "memory": "16Gi", "pods": "58"}
    up["status"]["capacity"] = dict(up["status"]["allocatable"])
    return up


def test_a_buffer_on_room_already_there_launches_nothing() -> None:
    cluster = _cluster(buffer(), template(), _node_with_room("4"))
    result = _pass(cluster)
    assert not result.provisioning.created
    assert _reasons(_status(cluster))[PROVISIONING] == ("True", "FitsExistingCapacity")
    assert result.buffers.provisioned[("default", "web")].on_nodes == 2


def test_a_real_pod_takes_the_room_first_and_the_buffer_is_launched_again() -> None:
    cluster = _cluster(buffer(), template(), _node_with_room("2"), pending_pod("real", "500m", "1Gi"))
    result = _pass(cluster)
    plan = result.provisioning.plan
    real = next(ref for ref in plan.placements if ref.name == "real")
    assert plan.placements[real].kind == "node"  # smaller than a chunk, yet it takes the room first
    provisioned = result.buffers.provisioned[("default", "web")]
    assert (provisioned.on_nodes, provisioned.new) == (1, 1)
    assert len(result.provisioning.created) == 1
    assert [e.reason for e in cluster.events] == ["Nominated"]  # for the real pod only


def test_gate_off_provisions_nothing_and_warns_on_the_buffer() -> None:
    cluster = _cluster(buffer(), template())
    result = _pass(cluster, FeatureGates())
    assert not result.provisioning.created and not _status(cluster)
    assert [e.reason for e in cluster.events if e.regarding.kind == "CapacityBuffer"] == [EVENT_REASON]


def test_an_invalid_buffer_is_skipped_and_counted() -> None:
    broken = buffer().to_dict()
    broken["spec"] = {"replicas": 1, "podTemplateRef": {"name": "chunk"}, "scalableRef": SCALABLE}  # both: refused
    cluster = _cluster(broken, buffer().to_dict() | {"metadata": {"name": "ok", "namespace": "default"}}, template())
    result = _pass(cluster)
    assert result.buffers.skipped == 1
    assert len(result.provisioning.created) == 1  # the valid one is still kept


def test_virtual_pods_are_held_on_their_nodeclaim_only_until_its_node_joins() -> None:
    chunks = virtual_pods(buffer(), resolve(buffer(), template()))
    real = pending_pod("real")
    claim = nodeclaim("default-abc").to_dict()
    claim["metadata"]["annotations"][NOMINATED_PODS] = nomination([p["metadata"]["uid"] for p in [*chunks, real]])
    launching = NodeClaim.model_validate(claim)
    flight = in_flight([launching], [], [*chunks, real], {}, now=NOW)
    assert len(flight.held) == 3 and not flight.pending  # launching: all held, no second launch
    claim["status"] = {"providerID": "aws:///us-west-2a/i-1", "nodeName": "ip-1"}
    joined = NodeClaim.model_validate(claim)
    up = node("ip-1", "aws:///us-west-2a/i-1", taints=[], labels={wk.LABEL_NODEPOOL: "default"})
    flight = in_flight([joined], [up], [*chunks, real], {}, now=NOW)
    assert [p["metadata"]["name"] for p in flight.held] == ["real"]  # the real pod's nomination still holds
    assert {p["metadata"]["name"] for p in flight.pending} == {"capacity-buffer-web-1", "capacity-buffer-web-2"}


def test_a_buffer_whose_template_is_missing_is_not_ready_and_launches_nothing() -> None:
    cluster = _cluster(buffer())
    result = _pass(cluster)
    assert not result.provisioning.created
    assert _reasons(_status(cluster)) == {
        READY_FOR_PROVISIONING: ("False", "PodTemplateNotFound"),
        PROVISIONING: ("False", "NotReadyForProvisioning"),
    }
    assert _pass(cluster).buffers.written == 0  # unchanged: not written again
