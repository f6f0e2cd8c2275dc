"""``autoscaler plan``: the provisioner's planning, printed, with nothing created or launched."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from autoscaler import cli
from autoscaler.apis.v1 import labels as wk
from autoscaler_dev.kube_emulator.emulator import KubeEmulator
from autoscaler_dev.world import embedded
from autoscaler_dev.world.aws_world import CLUSTER, INSTANCE_TYPES, REGION, ZONES, AWSWorld
from autoscaler_dev.world.ec2_market import Pool

TYPES = ",".join(INSTANCE_TYPES)
# A NodePool and EC2NodeClass selecting the moto world's subnets and group as they are tagged (the world is
# the session's: tests must not re-tag it).
POOL = [
    {
        "apiVersion": wk.API_VERSION,
        "kind": "NodePool",
        "metadata": {"name": "general-purpose"},
        "spec": {
            "template": {
                "spec": {
                    "requirements": [{"key": wk.LABEL_CAPACITY_TYPE, "operator": "In", "values": ["on-demand"]}],
                    "nodeClassRef": {"group": wk.AWS_GROUP, "kind": "EC2NodeClass", "name": "general-purpose"},
                }
            }
        },
    },
    {
        "apiVersion": wk.AWS_API_VERSION,
        "kind": "EC2NodeClass",
        "metadata": {"name": "general-purpose"},
        "spec": {
            "role": "KarpenterNodeRole-world",
            "amiSelectorTerms": [{"alias": "al2023@latest"}],
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": CLUSTER}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": CLUSTER}}],
        },
    },
]
WORKLOADS = [
    {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 5,
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": "1", "memory": "2Gi"}}}]},
            },
        },
    },
    {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "huge"},
        "spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": "200"}}}]},
    },
]


@pytest.fixture
def pods_file(tmp_path: Path) -> Path:
    path = tmp_path / "pods.yaml"
    path.write_text(yaml.safe_dump_all(WORKLOADS))
    return path


@pytest.fixture
def pool_file(tmp_path: Path) -> Path:
    path = tmp_path / "pool.yaml"
    path.write_text(yaml.safe_dump_all(POOL))
    return path


@pytest.fixture
def shared_world(aws_world: AWSWorld, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[KubeEmulator]]:
    """The embedded cluster on the session's moto world (moto's backend is one per process) and a fresh emulator."""
    started: list[KubeEmulator] = []

    @contextlib.contextmanager
    def start() -> Iterator[embedded.EmbeddedCluster]:
        with KubeEmulator() as kube:
            started.append(kube)
            yield embedded.EmbeddedCluster(aws_world, kube)

    monkeypatch.setattr(embedded.EmbeddedCluster, "start", start)
    yield started


def plan_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    assert cli.main(["plan", *args, "-o", "json", "--instance-types", TYPES]) == 0
    return dict(json.loads(capsys.readouterr().out))


def test_embedded_plan_lists_nodeclaims_with_their_pods_and_the_unschedulable(
    shared_world: list[KubeEmulator], pool_file: Path, pods_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = plan_json(capsys, "--embedded", "-f", str(pool_file), "-f", str(pods_file))
    claims = plan["nodeclaims"]
    assert claims and sum(len(c["pods"]) for c in claims) == 5
    assert all(p.startswith("default/web-") for c in claims for p in c["pods"])
    for claim in claims:
        assert claim["nodepool"] == "general-purpose" and claim["capacityTypes"] == ["on-demand"]
        assert claim["instanceTypes"] and claim["pricePerHour"] == claim["instanceTypes"][0]["pricePerHour"]
        assert set(claim["zones"]) <= {"us-west-2a", "us-west-2b", "us-west-2c"}
        body = claim["nodeClaim"]
        assert body["metadata"]["generateName"] == "general-purpose-"
        assert body["metadata"]["labels"][wk.LABEL_NODEPOOL] == "general-purpose"
    (unschedulable,) = plan["unschedulable"]
    assert unschedulable["pod"] == "default/huge" and "no instance type has enough resources" in unschedulable["reason"]
    (kube,) = shared_world
    assert kube.list(wk.API_VERSION, "NodeClaim") == []  # planned, not created


def test_embedded_plan_as_a_table(
    shared_world: list[KubeEmulator], pool_file: Path, pods_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["plan", "--embedded", "-f", str(pool_file), "-f", str(pods_file)]
    assert cli.main([*args, "--instance-types", TYPES]) == 0
    out = capsys.readouterr().out
    assert "NODEPOOL" in out and "INSTANCE TYPES" in out and "$/HOUR" in out
    assert "default/huge" in out and "UNSCHEDULABLE BECAUSE" in out
    assert "5 pods" in out.splitlines()[-1]


BUFFER = [
    {
        "apiVersion": "v1",
        "kind": "PodTemplate",
        "metadata": {"name": "chunk", "namespace": "default"},
        "template": {"spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": "1"}}}]}},
    },
    {
        "apiVersion": "autoscaling.x-k8s.io/v1beta1",
        "kind": "CapacityBuffer",
        "metadata": {"name": "headroom", "namespace": "default"},
        "spec": {"podTemplateRef": {"name": "chunk"}, "replicas": 3},
    },
]


def test_embedded_plan_shows_buffered_capacity_with_the_gate_on(
    shared_world: list[KubeEmulator], pool_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    buffers = tmp_path / "buffer.yaml"
    buffers.write_text(yaml.safe_dump_all(BUFFER))
    args = ["--embedded", "-f", str(pool_file), "-f", str(buffers)]
    assert plan_json(capsys, *args)["buffers"] == {}  # the gate is off by default: no buffered capacity
    plan = plan_json(capsys, *args, "--feature-gates", "CapacityBuffer=true")
    assert plan["buffers"] == {"default/headroom": {"on_nodes": 0, "in_flight": 0, "new": 3, "failed": 0}}
    assert sum(len(c["pods"]) for c in plan["nodeclaims"]) == 3


def test_embedded_plan_prices_spot_from_the_worlds_market(
    shared_world: list[KubeEmulator], aws_world: AWSWorld, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same prices ``simulate`` launches by: the shipped on-demand table and the world's spot prices per zone,
    so the types come cheapest first at their real spot price (not moto's $0.00001 for all)."""
    spot_pool = yaml.safe_load(yaml.safe_dump(POOL))
    spot_pool[0]["spec"]["template"]["spec"]["requirements"][0]["values"] = ["spot", "on-demand"]
    path = tmp_path / "spot-pool.yaml"
    path.write_text(yaml.safe_dump_all(spot_pool))
    pods = tmp_path / "pods.yaml"
    pods.write_text(yaml.safe_dump_all(WORKLOADS[:1]))
    (claim, *_) = plan_json(capsys, "--embedded", "-f", str(path), "-f", str(pods))["nodeclaims"]
    assert "spot" in claim["capacityTypes"]
    prices = [t["pricePerHour"] for t in claim["instanceTypes"]]
    assert prices == sorted(prices) and prices[0] > 0.001
    cheapest = claim["instanceTypes"][0]["name"]
    expected = min(aws_world.market.price(Pool(cheapest, zone, "spot")) or 0 for zone in ZONES)
    assert claim["pricePerHour"] == pytest.approx(expected, abs=1e-6)


def test_plan_against_a_cluster_reads_its_pending_pods_and_launches_nothing(
    aws_world: AWSWorld, pods_file: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    nodeclass = aws_world.nodeclass("planned")
    with KubeEmulator() as kube:
        kube.create({**nodeclass.to_dict(), "metadata": {"name": "planned"}})
        kube.create(
            {
                "apiVersion": wk.API_VERSION,
                "kind": "NodePool",
                "metadata": {"name": "planned"},
                "spec": {
                    "template": {
                        "spec": {
                            "requirements": [
                                {"key": wk.LABEL_CAPACITY_TYPE, "operator": "In", "values": ["on-demand"]}
                            ],
                            "nodeClassRef": {"group": wk.AWS_GROUP, "kind": "EC2NodeClass", "name": "planned"},
                        }
                    }
                },
            }
        )
        kube.create(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "waiting", "namespace": "default"},
                "spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": "1"}}}]},
                "status": {
                    "phase": "Pending",
                    "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
                },
            }
        )
        for name in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST", "STATE_TABLE_NAME"):
            monkeypatch.delenv(name, raising=False)
        for name, value in {
            "CLUSTER_ENDPOINT": kube.url,
            "AWS_ENDPOINT_URL": aws_world.endpoint,
            "AWS_REGION": REGION,
            "ISOLATED_VPC": "true",
        }.items():
            monkeypatch.setenv(name, value)
        fleets_before = len(aws_world.client("ec2").describe_fleets()["Fleets"])
        plan = plan_json(capsys, "--cluster", CLUSTER, "-f", str(pods_file))
        pods = sorted(p for c in plan["nodeclaims"] for p in c["pods"])
        assert "default/waiting" in pods and len(pods) == 6  # the cluster's pending pod and the five given
        assert [u["pod"] for u in plan["unschedulable"]] == ["default/huge"]
        assert kube.list(wk.API_VERSION, "NodeClaim") == [] and kube.list("events.k8s.io/v1", "Event") == []
        assert len(aws_world.client("ec2").describe_fleets()["Fleets"]) == fleets_before


def test_bad_manifests_are_reported_and_nothing_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        yaml.safe_dump({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {}})
    )
    assert cli.main(["plan", "--embedded", "-f", str(bad)]) == 1
    assert "spec.template with containers" in capsys.readouterr().err


def _node(
    name: str,
    instance_type: str,
    *,
    initialized: bool = True,
    annotations: dict[str, str] | None = None,
    nodepool: str = "general-purpose",
) -> list[dict[str, Any]]:
    """An initialized NodeClaim of the pool (general-purpose) and its Ready Node (no instance behind it)."""
    labels = {
        wk.LABEL_NODEPOOL: nodepool,
        wk.LABEL_INSTANCE_TYPE: instance_type,
        wk.LABEL_CAPACITY_TYPE: "on-demand",
        wk.LABEL_ZONE: "us-west-2a",
        wk.LABEL_ARCH: "amd64",
        wk.LABEL_OS: "linux",
    }
    capacity = {"cpu": "8", "memory": "32Gi", "pods": "58"}
    provider_id = f"aws:///us-west-2a/i-{name}"
    kinds = ("Launched", "Registered", "Initialized") if initialized else ("Launched", "Registered")
    conditions = [
        {"type": c, "status": "True", "reason": c, "lastTransitionTime": "2026-01-01T00:00:00Z"} for c in kinds
    ]
    claim = {
        "apiVersion": wk.API_VERSION,
        "kind": "NodeClaim",
        "metadata": {"name": name, "labels": labels, "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {
            "requirements": [{"key": wk.LABEL_INSTANCE_TYPE, "operator": "In", "values": [instance_type]}],
            "nodeClassRef": {"group": wk.AWS_GROUP, "kind": "EC2NodeClass", "name": "general-purpose"},
        },
        "status": {"providerID": provider_id, "nodeName": f"node-{name}", "conditions": conditions},
    }
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": f"node-{name}",
            "labels": {**labels, wk.LABEL_HOSTNAME: f"node-{name}"},
            "annotations": annotations or {},
        },
        "spec": {"providerID": provider_id},
        "status": {"capacity": capacity, "allocatable": capacity, "conditions": [{"type": "Ready", "status": "True"}]},
    }
    return [claim, node]


def _bound(name: str, node: str, **annotations: str) -> dict[str, Any]:
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "rs", "controller": True}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "annotations": annotations, "ownerReferences": [owner]},
        "spec": {
            "nodeName": node,
            "containers": [{"name": "app", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}],
        },
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
    }


@pytest.fixture
def disruption_file(tmp_path: Path) -> Path:
    """Two underutilized nodes, one held by a do-not-disrupt pod, one with do-not-disrupt, one not initialized."""
    disruption = {
        "consolidationPolicy": "WhenEmptyOrUnderutilized",
        "consolidateAfter": "0s",
        "budgets": [{"nodes": "2"}],
    }
    pool = {**POOL[0], "spec": {**POOL[0]["spec"], "disruption": disruption}}  # type: ignore[dict-item]
    objects: list[dict[str, Any]] = [pool, POOL[1]]
    for name in ("small-a", "small-b", "held", "pinned"):
        marks = {wk.ANNOTATION_DO_NOT_DISRUPT: "true"} if name == "pinned" else {}
        objects += _node(name, "m5.2xlarge", annotations=marks)
    objects += _node("booting", "m5.2xlarge", initialized=False)
    objects += [_bound("a-1", "node-small-a"), _bound("b-1", "node-small-b"), _bound("p-1", "node-pinned")]
    objects.append(_bound("h-1", "node-held", **{wk.ANNOTATION_DO_NOT_DISRUPT: "true"}))
    path = tmp_path / "disruption.yaml"
    path.write_text(yaml.safe_dump_all(objects))
    return path


def test_plan_disruption_names_each_node_with_its_decision_or_blocker(
    shared_world: list[KubeEmulator], disruption_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = plan_json(capsys, "--disruption", "--embedded", "-f", str(disruption_file))
    nodes = {n["node"]: n for n in plan["nodes"]}
    assert set(nodes) == {f"node-{n}" for n in ("small-a", "small-b", "held", "pinned", "booting")}
    assert all(n["action"] and n["reason"] for n in nodes.values())
    command = plan["command"]
    assert command["reason"] == "Underutilized" and command["consolidationType"] == "multi"
    assert sorted(command["nodes"]) == ["node-small-a", "node-small-b"]
    assert nodes["node-small-a"]["action"] == command["decision"] and nodes["node-small-a"]["consolidatable"]
    assert nodes["node-held"]["action"] == "blocked" and "default/h-1" in nodes["node-held"]["reason"]
    assert nodes["node-pinned"]["action"] == "ineligible" and "do-not-disrupt" in nodes["node-pinned"]["reason"]
    assert "not initialized" in nodes["node-booting"]["reason"]
    assert nodes["node-small-a"]["driftUnknown"]  # no instance behind it in the moto world
    budgets = {(b["nodePool"], b["reason"]): b for b in plan["budgets"]}
    assert budgets[("general-purpose", "Underutilized")]["limit"] == 2
    (kube,) = shared_world
    assert all(not (c.get("metadata") or {}).get("deletionTimestamp") for c in kube.list(wk.API_VERSION, "NodeClaim"))


def test_plan_disruption_as_a_table(
    shared_world: list[KubeEmulator], disruption_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["plan", "--disruption", "--embedded", "-f", str(disruption_file), "--instance-types", TYPES]
    assert cli.main(args) == 0
    out = capsys.readouterr().out
    assert "ACTION" in out and "REASON" in out and "ALLOWED" in out and "DISRUPTING" in out
    for name in ("small-a", "small-b", "held", "pinned", "booting"):
        assert f"node-{name}" in out
    assert out.splitlines()[-1].startswith("next pass: Underutilized")
