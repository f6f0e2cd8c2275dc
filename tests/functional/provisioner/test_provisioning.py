"""The provisioner function end to end: pending pods in, NodeClaims and EC2 instances out, nodes joining.

Real handler and adapters; Kubernetes is the API emulator over HTTP, AWS is moto over HTTP; events travel
EventBridge -> FIFO queue -> handler as in the stack."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from autoscaler import metrics
from autoscaler.apis.resources import parse_resources
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.conditions import get_condition
from autoscaler.apis.v1.hashing import NODEPOOL_HASH_VERSION, nodepool_hash
from autoscaler.apis.v1.nodepool import NodePool
from autoscaler_dev.world.aws_world import CLUSTER, AWSWorld
from tests.functional.provisioner.world import ProvisionerWorld

SPREAD = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "spread"}}, "topologyKey": wk.LABEL_HOSTNAME}
        ]
    }
}


@pytest.fixture
def world(aws_world: AWSWorld, monkeypatch: pytest.MonkeyPatch) -> Iterator[ProvisionerWorld]:
    with ProvisionerWorld.start(aws_world, monkeypatch) as world:
        yield world


def mixed_pods(world: ProvisionerWorld) -> dict[str, dict[str, Any]]:
    """50 pending pods of mixed shapes and constraints."""
    pods: dict[str, dict[str, Any]] = {}

    def add(name: str, *args: Any, **kwargs: Any) -> None:
        pods[name] = world.pending_pod(name, *args, **kwargs)

    for i in range(20):
        add(f"web-{i}", "250m", "512Mi", labels={"app": "web"})
    for i in range(10):
        add(f"api-{i}", "1", "2Gi", labels={"app": "api"})
    for i in range(6):
        add(f"batch-{i}", "3", "6Gi", labels={"app": "batch"})
    for i in range(6):
        add(f"arm-{i}", "500m", "1Gi", node_selector={wk.LABEL_ARCH: "arm64"})
    for i in range(4):
        add(f"zonal-{i}", "500m", "1Gi", node_selector={wk.LABEL_ZONE: "us-west-2b"})
    for i in range(2):
        add(f"gpu-{i}", "1", "4Gi", extra={wk.RESOURCE_NVIDIA_GPU: "1"})
    for i in range(2):
        add(f"spread-{i}", "100m", "128Mi", labels={"app": "spread"}, affinity=SPREAD)
    return pods


def requirement(claim: Any, key: str) -> set[str]:
    found = next((r for r in claim.spec.requirements if r.key == key), None)
    return set(found.values or []) if found is not None else set()


def test_fifty_mixed_pods_become_nodeclaims_and_instances(world: ProvisionerWorld) -> None:
    world.setup()
    pods = mixed_pods(world)
    world.publish("Pod Unschedulable", "pod", count=10)  # a burst: the forwarder's events for the pods

    (result, *rest) = world.drain()
    summary = result["pass"]
    assert summary["pods"] == 50 and summary["unschedulable"] == 0
    assert all(r["pass"] == {"skipped": "every event predates the last completed pass"} for r in rest)

    claims = world.nodeclaims()
    assert len(claims) == summary["nodeclaims_created"] == summary["launched"] > 0
    nodepool = NodePool.model_validate(world.kube.get(wk.API_VERSION, "NodePool", world.pool))
    requested = parse_resources({"cpu": "0"})
    for claim in claims:
        meta = claim.metadata
        assert claim.name.startswith(f"{world.pool}-")
        assert meta.labels[wk.LABEL_NODEPOOL] == world.pool and meta.labels["team"] == "web"
        assert meta.annotations[wk.ANNOTATION_NODEPOOL_HASH] == nodepool_hash(nodepool)
        assert meta.annotations[wk.ANNOTATION_NODEPOOL_HASH_VERSION] == NODEPOOL_HASH_VERSION
        assert wk.ANNOTATION_NODECLASS_HASH in meta.annotations
        assert meta.finalizers == [wk.FINALIZER_TERMINATION]
        (owner,) = meta.owner_references
        assert (owner.kind, owner.name, owner.uid) == ("NodePool", world.pool, nodepool.metadata.uid)
        assert claim.spec.expire_after == "168h" and claim.spec.node_class_ref.name == world.pool
        options = requirement(claim, wk.LABEL_INSTANCE_TYPE)
        assert options, "the chosen instance type options are in the requirements"
        assert meta.labels[wk.LABEL_INSTANCE_TYPE] in options  # launched as one of them
        assert get_condition(claim.status.conditions, "Launched").status == "True"
        requested = {"cpu": requested["cpu"] + parse_resources(claim.spec.resources.requests)["cpu"]}
    wanted = parse_resources({"cpu": "0"})["cpu"] + sum(
        parse_resources(p["spec"]["containers"][0]["resources"]["requests"])["cpu"] for p in pods.values()
    )
    assert requested["cpu"] >= wanted  # every pod's request is covered by some NodeClaim

    by_type = {c.metadata.labels[wk.LABEL_INSTANCE_TYPE]: c for c in claims}
    assert "g4dn.xlarge" in by_type  # the GPU pods
    assert any(c.metadata.labels[wk.LABEL_ARCH] == "arm64" for c in claims)  # the arm64 pods
    zonal = [c for c in claims if requirement(c, wk.LABEL_ZONE) == {"us-west-2b"}]
    assert zonal and all(c.metadata.labels[wk.LABEL_ZONE] == "us-west-2b" for c in zonal)

    instances = world.instances()
    assert len(instances) == len(claims)  # one instance per NodeClaim, no more
    by_claim = {next(t["Value"] for t in i["Tags"] if t["Key"] == wk.TAG_NODECLAIM): i for i in instances}
    assert set(by_claim) == {c.name for c in claims}
    for claim in claims:
        instance = by_claim[claim.name]
        tags = {t["Key"]: t["Value"] for t in instance["Tags"]}
        assert tags == {
            f"{wk.TAG_CLUSTER_PREFIX}{CLUSTER}": "owned",
            wk.TAG_NODEPOOL: world.pool,
            wk.TAG_CLUSTER_NAME: CLUSTER,
            wk.TAG_NODECLASS: world.pool,
            wk.TAG_NODECLAIM: claim.name,
        }
        assert (
            claim.status.provider_id == f"aws:///{instance['Placement']['AvailabilityZone']}/{instance['InstanceId']}"
        )
        assert instance["InstanceType"] in requirement(claim, wk.LABEL_INSTANCE_TYPE)

    nominated = world.events("Nominated")
    assert 0 < len(nominated) <= 10  # rate-limited as Karpenter's are
    assert all(e["note"].startswith("Pod should schedule on: nodeclaim/") for e in nominated)
    assert world.metric(metrics.NODECLAIMS_LAUNCHED) == len(claims)
    assert world.metric(metrics.NODECLAIMS_CREATED) == len(claims)

    world.sweep()  # a minute later, the nodes not up yet: every pod is held where it was planned
    again = world.drain()[0]["pass"]
    assert again["pods"] == 50 and again["nodeclaims_created"] == again["launched"] == 0
    assert len(world.instances()) == len(claims)


def test_joined_nodes_register_and_initialize(world: ProvisionerWorld) -> None:
    world.setup()
    for i in range(6):
        world.pending_pod(f"web-{i}", "1", "1Gi")
    world.publish("Pod Unschedulable", "web")
    world.drain()
    nodes = world.join_all()
    assert nodes
    world.publish("Node Created", "node", kind="Node")
    (result,) = world.drain()
    assert result["pass"]["registered"] == result["pass"]["initialized"] == len(nodes)

    ec2 = {i["InstanceId"]: {t["Key"]: t["Value"] for t in i["Tags"]} for i in world.instances()}
    for claim in world.nodeclaims():
        node = world.kube.get("v1", "Node", claim.status.node_name)
        labels = node["metadata"]["labels"]
        assert labels[wk.LABEL_REGISTERED] == labels[wk.LABEL_INITIALIZED] == "true"
        assert labels[wk.LABEL_NODEPOOL] == world.pool and labels["team"] == "web"
        assert node["metadata"]["finalizers"] == [wk.FINALIZER_TERMINATION]
        assert node["metadata"]["ownerReferences"][0]["uid"] == claim.metadata.uid
        assert not node["spec"].get("taints")  # karpenter.sh/unregistered removed
        assert all(
            get_condition(claim.status.conditions, t).status == "True" for t in ("Registered", "Initialized", "Ready")
        )
        instance_id = claim.status.provider_id.rsplit("/", 1)[1]
        assert ec2[instance_id][wk.TAG_NAME] == claim.status.node_name
        assert claim.metadata.annotations[wk.ANNOTATION_INSTANCE_TAGGED] == "true"
    status = world.kube.get(wk.API_VERSION, "NodePool", world.pool)["status"]
    assert status["resources"]["nodes"] == str(len(nodes))
    assert {c["type"]: c["status"] for c in status["conditions"]} == {
        "ValidationSucceeded": "True",
        "NodeClassReady": "True",
        "Ready": "True",
    }
