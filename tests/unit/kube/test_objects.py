"""Typed views of the JSON the Cluster port returns: what they read, and that absent parts read as empty."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from autoscaler.kube.objects import Body, Node, Pod
from autoscaler.kube.port import ObjectRef


def node_json() -> dict[str, Any]:
    return {
        "metadata": {
            "name": "ip-10-0-0-1.ec2.internal",
            "uid": "n-1",
            "resourceVersion": "42",
            "labels": {"karpenter.sh/nodepool": "default"},
            "annotations": {"note": "x"},
            "finalizers": ["karpenter.sh/termination"],
            "ownerReferences": [{"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "name": "default-a"}],
            "creationTimestamp": "2026-11-30T04:05:06Z",
            "deletionTimestamp": "2026-11-30T05:00:00Z",
        },
        "spec": {
            "providerID": "aws:///us-east-1a/i-0123456789abcdef0",
            "taints": [{"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}],
            "unschedulable": True,
        },
        "status": {
            "conditions": [{"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": "True"}],
            "capacity": {"cpu": "2"},
            "allocatable": {"cpu": "1930m"},
        },
    }


def test_a_node_view_reads_its_fields() -> None:
    raw = node_json()
    node = Node(raw)
    assert (node.name, node.namespace, node.uid, node.resource_version) == ("ip-10-0-0-1.ec2.internal", "", "n-1", "42")
    assert node.labels == {"karpenter.sh/nodepool": "default"} and node.annotations == {"note": "x"}
    assert list(node.finalizers) == ["karpenter.sh/termination"]
    assert node.owned_by("NodeClaim") and not node.owned_by("DaemonSet")
    assert node.creation_timestamp == "2026-11-30T04:05:06Z"
    assert node.created_at == datetime(2026, 11, 30, 4, 5, 6, tzinfo=UTC)
    assert node.deleting and node.deletion_timestamp == "2026-11-30T05:00:00Z"
    assert node.provider_id == "aws:///us-east-1a/i-0123456789abcdef0"
    assert node.has_taint("karpenter.sh/disrupted", "NoSchedule")
    assert not node.has_taint("karpenter.sh/disrupted", "NoExecute")
    assert node.unschedulable and node.ready
    assert node.capacity == {"cpu": "2"} and node.allocatable == {"cpu": "1930m"}
    assert node.condition("MemoryPressure") == {"type": "MemoryPressure", "status": "False"}
    assert node.condition_is("MemoryPressure", "False") and not node.condition_is("DiskPressure", "False")
    # a list item carries no kind: the view of a known kind supplies it
    assert node.ref == ObjectRef("Node", "ip-10-0-0-1.ec2.internal", uid="n-1")


def test_a_view_wraps_without_copying() -> None:
    raw = node_json()
    node = Node(raw)
    assert node.raw is raw and node.metadata is raw["metadata"] and node.labels is raw["metadata"]["labels"]
    raw["spec"]["unschedulable"] = False  # it reads the mapping as it is now
    assert not node.unschedulable


def test_absent_parts_read_as_empty() -> None:
    for raw in ({}, {"metadata": None, "spec": None, "status": None}, {"metadata": {}, "status": {"conditions": None}}):
        node = Node(raw)
        assert (node.name, node.namespace, node.uid, node.resource_version, node.provider_id) == ("", "", None, "", "")
        assert not (node.labels or node.annotations or node.finalizers or node.owner_references or node.taints)
        assert node.creation_timestamp is None and node.created_at is None and node.deletion_timestamp is None
        assert not (node.deleting or node.unschedulable or node.ready or node.conditions)
        assert node.condition("Ready") is None and node.capacity == {} and node.allocatable == {}
    assert Node({"metadata": {"creationTimestamp": "yesterday"}}).created_at is None  # unreadable: unknown


def test_a_pod_view_reads_its_fields_and_namespaced_ref() -> None:
    raw = {
        "metadata": {"name": "web-1", "namespace": "shop", "uid": "p-1"},
        "spec": {
            "nodeName": "node-a",
            "priorityClassName": "system-node-critical",
            "tolerations": [{"operator": "Exists"}],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}],
        },
        "status": {"phase": "Running"},
    }
    pod = Pod(raw)
    assert (pod.name, pod.namespace, pod.node_name, pod.phase) == ("web-1", "shop", "node-a", "Running")
    assert pod.priority_class_name == "system-node-critical" and not pod.terminal
    assert [t["operator"] for t in pod.tolerations] == ["Exists"] and pod.volumes[0]["name"] == "data"
    assert pod.ref == ObjectRef("Pod", "web-1", "shop", "p-1")
    assert Pod({"status": {"phase": "Failed"}}).terminal and Pod({}).node_name == ""


def test_a_body_takes_its_kind_from_the_object() -> None:
    lease = Body({"kind": "Lease", "metadata": {"name": "forwarder", "namespace": "karpenter"}})
    assert lease.kind == "Lease" and lease.ref == ObjectRef("Lease", "forwarder", "karpenter")
    assert Body({}).kind == "" and repr(Pod({"metadata": {"name": "a", "namespace": "b"}})) == "Pod(Pod/b/a)"


def test_of_wraps_once() -> None:
    raw = {"metadata": {"name": "web-1"}}
    pod = Pod(raw)
    assert Pod.of(pod) is pod  # already a view of its kind: reused
    assert Pod.of(raw).raw is raw and Pod.of(Body(raw)).raw is raw  # a mapping, or another view's mapping
    assert isinstance(Node.of(pod), Node) and Node.of(pod).raw is raw
