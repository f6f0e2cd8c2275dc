"""NodePool status (conditions, resources in use) and the NodePool drift hash, against in-memory Kubernetes."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from autoscaler.apis.conversion.annotations import encode_kubelet
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.conditions import READY
from autoscaler.apis.v1.ec2nodeclass import EC2NodeClass
from autoscaler.apis.v1.hashing import NODEPOOL_HASH_VERSION, nodepool_hash
from autoscaler.apis.v1.kubelet import KubeletConfiguration
from autoscaler.apis.v1.nodeclaim import NodeClaim, NodeClaimStatus
from autoscaler.apis.v1.nodepool import NodePool
from autoscaler.controllers.nodepool import (
    NODECLASS_READY,
    VALIDATION_SUCCEEDED,
    NodePoolController,
    is_ready,
    resources_in_use,
)
from autoscaler.settings import FeatureGates
from tests.support.memory_cluster import MemoryCluster
from tests.unit.controllers.lifecycle_doubles import node, nodeclaim

NOW = datetime(2026, 11, 30, 12, tzinfo=UTC)


def nodepool(name: str = "default", nodeclass: str = "default", **metadata: Any) -> NodePool:
    return NodePool.model_validate(
        {
            "metadata": {"name": name, "uid": f"uid-{name}", **metadata},
            "spec": {
                "template": {
                    "spec": {
                        "requirements": [{"key": wk.LABEL_ARCH, "operator": "In", "values": ["amd64"]}],
                        "nodeClassRef": {"group": wk.AWS_GROUP, "kind": "EC2NodeClass", "name": nodeclass},
                    }
                },
                "limits": {"cpu": "100"},
            },
        }
    )


def nodeclass(name: str = "default", ready: str | None = "True", deleting: bool = False) -> EC2NodeClass:
    body: dict[str, Any] = {
        "metadata": {"name": name, **({"deletionTimestamp": "2026-11-30T11:00:00Z"} if deleting else {})},
        "spec": {
            "role": "nodes",
            "amiSelectorTerms": [{"alias": "al2023@latest"}],
            "subnetSelectorTerms": [{"tags": {"a": "b"}}],
            "securityGroupSelectorTerms": [{"tags": {"a": "b"}}],
        },
    }
    if ready is not None:
        body["status"] = {
            "conditions": [
                {
                    "type": READY,
                    "status": ready,
                    "reason": "SubnetsNotFound" if ready == "False" else READY,
                    "message": "no subnet matched" if ready == "False" else "",
                    "lastTransitionTime": "2026-11-30T11:00:00Z",
                }
            ]
        }
    return EC2NodeClass.model_validate(body)


def conditions(cluster: MemoryCluster, name: str = "default") -> dict[str, tuple[str, str]]:
    stored = cluster.nodepool(name)
    return {c.type: (c.status, c.reason or "") for c in stored.status.conditions}


def reconcile(
    cluster: MemoryCluster, nodes: list[dict[str, Any]] | None = None, gates: FeatureGates | None = None
) -> Any:
    controller = NodePoolController(cluster, lambda: NOW, gates)
    return controller.reconcile(cluster.nodepools(), cluster.nodeclasses(), cluster.nodeclaims(), nodes or [])


def test_a_nodepool_with_a_ready_class_is_ready() -> None:
    cluster = MemoryCluster(nodepool(), nodeclass())
    result = reconcile(cluster)
    assert result.ready == ["default"] and result.written == 1
    assert conditions(cluster) == {
        VALIDATION_SUCCEEDED: ("True", VALIDATION_SUCCEEDED),
        NODECLASS_READY: ("True", NODECLASS_READY),
        READY: ("True", READY),
    }
    assert reconcile(cluster).written == 0  # nothing changed: nothing written


def test_nodeclass_readiness_reasons() -> None:
    cases = {
        "missing": (None, "NodeClassNotFound"),
        "unknown": (nodeclass("unknown", ready=None), "NodeClassReadinessUnknown"),
        "failing": (nodeclass("failing", ready="False"), "SubnetsNotFound"),
        "deleting": (nodeclass("deleting", deleting=True), "NodeClassTerminating"),
    }
    for name, (cls, reason) in cases.items():
        objects: list[Any] = [nodepool(name, nodeclass=name)] + ([cls] if cls else [])
        cluster = MemoryCluster(*objects)
        result = reconcile(cluster)
        assert name in result.not_ready
        assert conditions(cluster, name)[NODECLASS_READY] == ("False", reason)
        assert conditions(cluster, name)[READY][0] == "False"
        assert not is_ready(cluster.nodepool(name), {c.name: c for c in cluster.nodeclasses()}, NOW)


def test_an_invalid_kubelet_compatibility_annotation_fails_validation() -> None:
    broken = nodepool(annotations={wk.ANNOTATION_KUBELET_COMPATIBILITY: "{not json"})
    cluster = MemoryCluster(broken, nodeclass())
    reconcile(cluster)
    assert conditions(cluster)[VALIDATION_SUCCEEDED] == ("False", "NodePoolValidationFailed")
    good = nodepool(
        annotations={wk.ANNOTATION_KUBELET_COMPATIBILITY: encode_kubelet(KubeletConfiguration(max_pods=20))}
    )
    assert is_ready(good, {"default": nodeclass()}, NOW)


def test_runtime_validation_fails_validation_succeeded_and_keeps_the_nodepool_not_ready() -> None:
    body = nodepool().to_dict()
    body["spec"]["template"]["metadata"] = {"labels": {"bad key": "x"}}
    body["spec"]["template"]["spec"]["taints"] = [{"key": "a", "effect": "NoSchedule"}]
    body["spec"]["template"]["spec"]["startupTaints"] = [{"key": "a", "effect": "NoSchedule"}]
    invalid = NodePool.model_validate(body)  # admitted: the API server stores it, Karpenter's controller objects
    cluster = MemoryCluster(invalid, nodeclass())
    result = reconcile(cluster)
    assert conditions(cluster)[VALIDATION_SUCCEEDED] == ("False", "NodePoolValidationFailed")
    assert conditions(cluster)[READY][0] == "False" and "default" in result.not_ready
    (validation,) = [c for c in cluster.nodepool("default").status.conditions if c.type == VALIDATION_SUCCEEDED]
    assert validation.message == (
        "labels: key \"bad key\" is not a qualified name: its name must be letters, digits, '-', '_' or '.', "
        "starting and ending with a letter or digit; startupTaints: taint a:NoSchedule is repeated (a key and "
        "effect may appear once)"
    )
    assert not is_ready(invalid, {"default": nodeclass()}, NOW)
    fixed = NodePool.model_validate(
        {**body, "spec": {**body["spec"], "template": nodepool().to_dict()["spec"]["template"]}}
    )
    assert is_ready(fixed, {"default": nodeclass()}, NOW)


def test_status_nodes_counts_the_pools_nodes_for_the_scale_subresource() -> None:
    joined = launched("joined", "aws:///z/i-1", {"cpu": "2"})
    cluster = MemoryCluster(nodepool(), nodeclass(), joined)
    reconcile(cluster, [node("n1", "aws:///z/i-1")])
    status = cluster.nodepool("default").status
    assert status.nodes == 1 and status.resources["nodes"] == "1"
    assert status.to_dict()["nodes"] == 1


def test_a_field_whose_feature_gate_is_off_is_kept_and_warned_of() -> None:
    static = NodePool.model_validate(
        {**nodepool().to_dict(), "spec": {**nodepool().to_dict()["spec"], "limits": {}, "replicas": 3}}
    )
    reserving = nodeclass().to_dict()
    reserving["spec"]["capacityReservationSelectorTerms"] = [{"id": "cr-0abc"}]
    cluster = MemoryCluster(static, EC2NodeClass.model_validate(reserving))
    reconcile(cluster, gates=FeatureGates(reserved_capacity=False))
    warnings = [e for e in cluster.events if e.reason == "FeatureGateDisabled"]
    assert {(e.regarding.kind, e.type) for e in warnings} == {("NodePool", "Warning"), ("EC2NodeClass", "Warning")}
    assert "spec.replicas: ignored while the StaticCapacity feature gate is off" in warnings[0].message
    assert cluster.nodepool("default").spec.replicas == 3  # accepted and kept, only ignored
    cluster.events.clear()
    reconcile(cluster, gates=FeatureGates(static_capacity=True))  # ReservedCapacity on by default
    assert [e for e in cluster.events if e.reason == "FeatureGateDisabled"] == []


def launched(name: str, provider: str, capacity: dict[str, str], pool: str = "default") -> NodeClaim:
    claim = nodeclaim(name)
    labels = {**(claim.metadata.labels or {}), wk.LABEL_NODEPOOL: pool}
    return claim.model_copy(
        update={
            "metadata": claim.metadata.model_copy(update={"labels": labels}),
            "status": NodeClaimStatus(provider_id=provider, capacity=capacity),
        }
    )


def test_resources_count_nodes_and_in_flight_nodeclaims_once() -> None:
    joined = launched("joined", "aws:///z/i-1", {"cpu": "2", "memory": "8Gi", "pods": "29"})
    flying = launched("flying", "aws:///z/i-2", {"cpu": "4", "memory": "16Gi", "pods": "58"})
    unlaunched = nodeclaim("new")  # no capacity known yet: counted as a node, with nothing in it
    other = launched("other", "aws:///z/i-3", {"cpu": "8"}, pool="batch")
    node_of_joined = node("n1", "aws:///z/i-1")  # the node's capacity wins over the NodeClaim's estimate
    stray = node("n9", "aws:///z/i-9", labels={wk.LABEL_NODEPOOL: "default"})
    used = resources_in_use("default", [joined, flying, unlaunched, other], [node_of_joined, stray])
    assert used == {"cpu": "8", "memory": "32Gi", "pods": "116", "ephemeral-storage": "40Gi", "nodes": "4"}


def test_deleting_nodeclaims_are_not_counted() -> None:
    claim = launched("going", "aws:///z/i-1", {"cpu": "2"})
    going = claim.model_copy(
        update={"metadata": claim.metadata.model_copy(update={"deletion_timestamp": "2026-11-30T11:00:00Z"})}
    )
    assert resources_in_use("default", [going], [])["nodes"] == "0"


def test_the_hash_is_stamped_and_nodeclaims_of_an_older_version_restamped() -> None:
    old = nodeclaim("old")
    old = old.model_copy(
        update={
            "metadata": old.metadata.model_copy(
                update={"annotations": {wk.ANNOTATION_NODEPOOL_HASH: "1", wk.ANNOTATION_NODEPOOL_HASH_VERSION: "v3"}}
            )
        }
    )
    pool = nodepool(annotations={wk.ANNOTATION_NODEPOOL_HASH: "1", wk.ANNOTATION_NODEPOOL_HASH_VERSION: "v3"})
    cluster = MemoryCluster(pool, nodeclass(), old)
    NodePoolController(cluster, lambda: NOW).stamp_hashes(cluster.nodepools(), cluster.nodeclaims())
    expected = {
        wk.ANNOTATION_NODEPOOL_HASH: nodepool_hash(pool),
        wk.ANNOTATION_NODEPOOL_HASH_VERSION: NODEPOOL_HASH_VERSION,
    }
    assert cluster.nodepool("default").metadata.annotations == expected
    assert cluster.nodeclaim("old").metadata.annotations == expected
    writes = list(cluster.writes)
    NodePoolController(cluster, lambda: NOW).stamp_hashes(cluster.nodepools(), cluster.nodeclaims())
    assert cluster.writes == writes
