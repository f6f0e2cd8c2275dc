"""What a pass reads of the cluster for scheduling (issue 27): every Namespace and StorageClass once, so that pods a
caller adds to the plan are resolved like the cluster's own."""

from __future__ import annotations

from typing import Any

from autoscaler.apis.v1 import labels as wk
from autoscaler.cloudprovider.unavailable import InMemoryUnavailableOfferings
from autoscaler.controllers.provisioning import ProvisioningController
from autoscaler.controllers.state import ClusterState
from tests.support.memory_cluster import MemoryCluster
from tests.unit.controllers.lifecycle_doubles import NOW
from tests.unit.controllers.provisioning_doubles import FakeCatalogue, nodepool, pending_pod, ready_nodeclass


def namespace(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def in_namespace(pod: dict[str, Any], name: str, **labels: str) -> dict[str, Any]:
    pod["metadata"].update(namespace=name, labels=labels)
    return pod


def plan(cluster: MemoryCluster, extra: list[dict[str, Any]]) -> Any:
    controller = ProvisioningController(cluster, FakeCatalogue(), InMemoryUnavailableOfferings(), clock=lambda: NOW)
    return controller.plan(ClusterState.read(cluster), extra)


def test_a_namespace_selector_selects_a_pod_given_to_the_plan_by_its_namespaces_labels() -> None:
    term = {
        "labelSelector": {"matchLabels": {"app": "db"}},
        "topologyKey": wk.LABEL_HOSTNAME,
        "namespaceSelector": {"matchLabels": {"tier": "data"}},
    }
    client = in_namespace(
        pending_pod("client", affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}),
        "team-a",
    )
    cluster = MemoryCluster(
        nodepool(), ready_nodeclass(**{wk.ANNOTATION_NODECLASS_HASH: "42"}), namespace("team-a"), client
    )
    cluster.add(namespace("team-b", tier="data"))
    database = in_namespace(pending_pod("db", "2"), "team-b", app="db")  # given like `plan -f`, not in the cluster
    result = plan(cluster, [database])
    assert not result.unschedulable
    where = {(ref.namespace, ref.name): placement.name for ref, placement in result.placements.items()}
    assert where[("team-a", "client")] == where[("team-b", "db")]
    assert cluster.calls["get"] == 0  # the labels came from one list, not a read per namespace
    assert cluster.calls["list_raw"] == 2  # Namespaces and StorageClasses, once each


def test_a_claim_given_no_class_follows_the_clusters_default_storage_class() -> None:
    default = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": "gp3", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
        "provisioner": "ebs.csi.aws.com",
        "volumeBindingMode": "Immediate",
        "allowedTopologies": [{"matchLabelExpressions": [{"key": wk.LABEL_ZONE, "values": ["us-west-2b"]}]}],
    }
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data", "namespace": "default"}}
    claim["spec"] = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    user = pending_pod("user", volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}])
    cluster = MemoryCluster(nodepool(), ready_nodeclass(**{wk.ANNOTATION_NODECLASS_HASH: "42"}), default, claim, user)
    result = plan(cluster, [])
    assert not result.unschedulable
    (planned,) = result.nodeclaims
    assert planned.zones() == ["us-west-2b"]
