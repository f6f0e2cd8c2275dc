"""``autoscaler plan`` on capacity kept for other reasons than the pending pods (issue 21): static NodePools (what
their reconciler would do, the pending pods that fit their nodes; consolidation leaves them) and capacity
reservations (their offerings and price, the NodeClaims the launcher would put there first)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from autoscaler.apis.v1 import labels as wk
from autoscaler_dev.kube_emulator.emulator import KubeEmulator
from autoscaler_dev.world.aws_world import AWSWorld
from tests.functional.test_plan_command import BUFFER, POOL, _bound, _node, plan_json, shared_world

__all__ = ["shared_world"]  # the fixture, shared with the plan command's tests
STATIC_GATE = ("--feature-gates", "StaticCapacity=true")


def _pods(count: int, cpu: str = "1500m") -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"job-{i}", "namespace": "default"},
            "spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]},
        }
        for i in range(count)
    ]


def _write(tmp_path: Path, name: str, objects: list[dict[str, Any]]) -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(objects))
    return str(path)


def _static_pool(replicas: int) -> dict[str, Any]:
    pool = copy.deepcopy(POOL[0])
    pool["metadata"]["name"] = "static"
    pool["spec"]["replicas"] = replicas
    pool["spec"]["disruption"] = {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "0s"}
    return pool


def test_plan_shows_a_static_pool_s_decision_and_the_pending_pods_that_fit_its_nodes(
    shared_world: list[KubeEmulator], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A static pool of 3 replicas with one node (8 cpu, 500m used): the reconciler would create 2; of 6 pending pods
    of 2 cpu, the 3 that fit that node go there, the rest get NodeClaims of the dynamic pool (the static one launches
    none for pods)."""
    objects = [*POOL, _static_pool(3), *_node("kept", "m5.2xlarge", nodepool="static"), _bound("busy", "node-kept")]
    cluster = _write(tmp_path, "cluster.yaml", objects)
    pods = _write(tmp_path, "pods.yaml", _pods(6, cpu="2"))
    plan = plan_json(capsys, "--embedded", "-f", cluster, "-f", pods, *STATIC_GATE)
    static = plan["static"]["static"]
    assert (static["replicas"], static["running"], static["create"], static["remove"]) == (3, 1, 2, {})
    assert len(static["pods"]) == 3 and all(p.startswith("default/job-") for p in static["pods"])
    assert {c["nodepool"] for c in plan["nodeclaims"]} == {"general-purpose"}
    assert sum(len(c["pods"]) for c in plan["nodeclaims"]) == 3
    assert plan["skippedNodePools"]["static"].startswith("is static")
    assert plan_json(capsys, "--embedded", "-f", cluster, "-f", pods)["static"] == {}  # the gate is off by default


def test_plan_disruption_leaves_static_nodes_to_their_pool_and_counts_it(
    shared_world: list[KubeEmulator], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two static nodes, one empty, beside an empty dynamic one: emptiness deletes the dynamic one only, and both
    static nodes say why they are left alone."""
    objects = [*POOL, _static_pool(2), *_node("s-1", "m5.2xlarge", nodepool="static")]
    objects += [*_node("s-2", "m5.2xlarge", nodepool="static"), _bound("b-1", "node-s-1")]
    objects += _node("idle", "m5.2xlarge")
    cluster = _write(tmp_path, "cluster.yaml", objects)
    plan = plan_json(capsys, "--disruption", "--embedded", "-f", cluster, *STATIC_GATE)
    nodes = {n["node"]: n for n in plan["nodes"]}
    assert plan["command"]["reason"] == "Empty" and plan["command"]["nodes"] == ["node-idle"]
    for name in ("node-s-1", "node-s-2"):
        assert nodes[name]["static"] is True and nodes[name]["action"] == "blocked"
        assert nodes[name]["reason"] == "its NodePool is static: consolidation leaves it"
    assert nodes["node-idle"]["static"] is False
    assert plan["static"] == {"static": {"replicas": 2, "running": 2, "pendingDisruption": 0, "deleting": 0}}


def test_plan_disruption_counts_a_buffer_s_room_as_demand(
    shared_world: list[KubeEmulator], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An empty node holding a CapacityBuffer's 3 chunks: with the gate on it holds buffer room, so it is not empty:
    at most replaced by a cheaper node that keeps the room; with the gate off the same node is deleted as empty."""
    cluster = _write(tmp_path, "cluster.yaml", [*POOL, *_node("spare", "m5.2xlarge"), *BUFFER])
    args = ("--disruption", "--embedded", "-f", cluster)
    plan = plan_json(capsys, *args, "--feature-gates", "CapacityBuffer=true")
    (node,) = plan["nodes"]
    assert node["bufferPods"] == 3 and node["action"] == "replace"
    assert plan["command"]["reason"] == "Underutilized" and len(plan["command"]["replacements"]) == 1
    plan = plan_json(capsys, *args)
    (node,) = plan["nodes"]
    assert node["bufferPods"] == 0 and node["action"] == "delete" and plan["command"]["reason"] == "Empty"


def _reserved_class(rid: str) -> dict[str, Any]:
    nodeclass = copy.deepcopy(POOL[1])
    nodeclass["spec"]["capacityReservationSelectorTerms"] = [{"id": rid}]
    return nodeclass


def _reserving_pool() -> dict[str, Any]:
    pool = copy.deepcopy(POOL[0])
    pool["spec"]["template"]["spec"]["requirements"] = [
        {"key": wk.LABEL_CAPACITY_TYPE, "operator": "In", "values": ["reserved", "on-demand"]},
        {"key": wk.LABEL_INSTANCE_TYPE, "operator": "In", "values": ["m5.large"]},
    ]
    return pool


def test_plan_shows_each_reservation_its_price_and_the_nodeclaims_that_launch_into_it_first(
    shared_world: list[KubeEmulator], aws_world: AWSWorld, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """2 free m5.large in a targeted reservation, 3 pods of one m5.large each: the first two NodeClaims launch into
    the reservation, the third on-demand, as the launcher's per-pass count decides."""
    rid = aws_world.reserve("m5.large", "us-west-2a", 2, match_criteria="targeted")
    cluster = _write(tmp_path, "cluster.yaml", [_reserving_pool(), _reserved_class(rid)])
    plan = plan_json(capsys, "--embedded", "-f", cluster, "-f", _write(tmp_path, "pods.yaml", _pods(3)))
    (row,) = plan["reservations"]
    assert (row["reservation"], row["instanceType"], row["zone"], row["free"]) == (rid, "m5.large", "us-west-2a", 2)
    assert row["available"] and row["nodePools"] == ["general-purpose"] and row["reservationType"] == "default"
    on_demand = 0.096  # m5.large in us-west-2, the shipped table
    assert row["pricePerHour"] == pytest.approx(on_demand / 10_000_000)
    launches = [c["launch"] for c in plan["nodeclaims"]]
    assert sorted((x["capacityType"], x["reservation"]) for x in launches) == [
        ("on-demand", None),
        ("reserved", rid),
        ("reserved", rid),
    ]
    assert row["nodeClaims"] == [i for i, x in enumerate(launches, 1) if x["reservation"] == rid]
    # Priced as launched: the scheduler offered all three the reservation, the launcher fills it with two.
    prices = sorted(x["pricePerHour"] for x in launches)
    assert prices == [pytest.approx(on_demand / 10_000_000), pytest.approx(on_demand / 10_000_000), on_demand]
    assert plan["pricePerHour"] == pytest.approx(on_demand, abs=1e-6)
    (described,) = aws_world.client("ec2").describe_capacity_reservations(CapacityReservationIds=[rid])[
        "CapacityReservations"
    ]
    assert described["AvailableInstanceCount"] == 2


def test_plan_disruption_prices_a_reserved_node_as_karpenter_does(
    shared_world: list[KubeEmulator], aws_world: AWSWorld, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rid = aws_world.reserve("m5.large", "us-west-2a", 1, match_criteria="targeted")
    objects: list[dict[str, Any]] = [_reserving_pool(), _reserved_class(rid)]
    claim, node = _node("r-1", "m5.large")
    for labels in (claim["metadata"]["labels"], node["metadata"]["labels"]):
        labels.update({wk.LABEL_CAPACITY_TYPE: "reserved", wk.LABEL_CAPACITY_RESERVATION_ID: rid})
    objects += [claim, node, *_node("od-1", "m5.large")]
    plan = plan_json(capsys, "--disruption", "--embedded", "-f", _write(tmp_path, "cluster.yaml", objects))
    nodes = {n["node"]: n for n in plan["nodes"]}
    reserved, on_demand = nodes["node-r-1"], nodes["node-od-1"]
    assert (reserved["capacityType"], reserved["reservation"]) == ("reserved", rid)
    assert reserved["pricePerHour"] == pytest.approx(0.096 / 10_000_000)
    assert (on_demand["capacityType"], on_demand["pricePerHour"]) == ("on-demand", pytest.approx(0.096))
