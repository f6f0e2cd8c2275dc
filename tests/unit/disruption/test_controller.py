"""The disruption pass end to end over the in-memory cluster: what it marks, creates, deletes and explains."""

from __future__ import annotations

from datetime import timedelta

import boto3
from botocore.stub import Stubber

from autoscaler import metrics as m
from autoscaler.apis.v1 import labels as wk
from autoscaler.cloudprovider.types import Drift
from autoscaler.controllers.disruption.controller import DisruptionResult
from autoscaler.controllers.orchestration.record import REPLACES
from autoscaler.providers.aws.clients import AWSClients
from autoscaler.providers.aws.zonalshift import ArcZonalShifts
from tests.unit.disruption.world import NOW, FakeCloud, World, node_and_claim, pod, pool


def _nodes(count: int, nodepool, instance_type: str = "m5.xlarge", **kwargs):  # type: ignore[no-untyped-def]
    objects = []
    for index in range(count):
        claim, node = node_and_claim(f"n{index}", nodepool, instance_type, **kwargs)
        objects += [claim, node]
    return objects


def test_empty_consolidatable_nodes_are_deleted_within_the_budget() -> None:
    nodepool = pool(disruption={"budgets": [{"nodes": "2"}]})
    world = World.of(nodepool, *_nodes(4, nodepool))
    result = world.controller().run()
    assert result is not None
    assert sorted(result.outcome.deleted) == ["n0", "n1"]
    assert all(reason == "Empty" for reason in result.outcome.deleted.values())
    assert world.claim("n0").metadata.deletion_timestamp and not world.claim("n2").metadata.deletion_timestamp
    assert "Consolidatable" in world.conditions("n2")
    blocked = result.assessment.decisions.blocked
    assert "Empty budget of NodePool default allows no disruption now" in blocked["node-n2"]


def test_underutilized_nodes_are_consolidated_onto_a_cheaper_replacement() -> None:
    nodepool = pool(disruption={"budgets": [{"nodes": "100%"}]})
    objects = _nodes(3, nodepool, "m5.2xlarge")
    pods = [pod(f"p{i}", f"node-n{i % 3}", cpu="300m", memory="512Mi") for i in range(6)]
    world = World.of(nodepool, *objects, *pods)
    result = world.controller().run()
    assert result is not None
    command = result.assessment.decisions.command
    assert command is not None and command.reason == "Underutilized" and command.consolidation_type == "multi"
    assert len(command.candidates) == 3 and len(command.replacements) == 1
    assert all(price < 0.384 * 3 for _, price in command.replacements[0].options)
    (created,) = result.outcome.created_names
    assert world.claim(created).metadata.annotations[REPLACES] == "n0,n1,n2"  # type: ignore[index]
    for name in ("n0", "n1", "n2"):
        assert world.conditions(name)["DisruptionReason"] == "Underutilized"
        node = world.cluster.stored("Node", f"node-{name}")
        assert {"key": wk.TAINT_DISRUPTED, "effect": "NoSchedule"} in node["spec"]["taints"]  # type: ignore[index]
        assert not world.claim(name).metadata.deletion_timestamp  # the replacement is not up yet


def test_drifted_nodes_are_marked_and_replaced() -> None:
    nodepool = pool(disruption={"consolidateAfter": "Never", "budgets": [{"nodes": "1"}]})
    objects = _nodes(2, nodepool)
    pods = [pod("a", "node-n0", cpu="3"), pod("b", "node-n1", cpu="3")]
    cloud = FakeCloud(drifts={"n0": Drift("AMIDrift", "ami-old not among resolved [ami-new] for alias al2023@latest")})
    world = World.of(nodepool, *objects, *pods, cloud=cloud)
    result = world.controller().run()
    assert result is not None
    assert result.newly_drifted == {"n0": "AMIDrift"}
    assert world.conditions("n0")["Drifted"] == "AMIDrift"
    assert "Drifted" not in world.conditions("n1")
    assert result.outcome.started == ["n0"] and len(result.outcome.created) == 1


def test_expired_nodes_are_deleted_regardless_of_budgets() -> None:
    nodepool = pool(disruption={"budgets": [{"nodes": "0"}]}, template_spec={"expireAfter": "24h"})
    objects = _nodes(2, nodepool, expireAfter="24h", created=NOW - timedelta(hours=25))
    world = World.of(nodepool, *objects, pod("a", "node-n0"))
    result = world.controller().run()
    assert result is not None
    assert result.outcome.deleted == {"n0": "Expired", "n1": "Expired"}


ARN = "arn:aws:eks:us-west-2:123456789012:cluster/demo"


def test_failed_arc_reads_of_the_pass_are_counted_as_the_provisioner_counts_them() -> None:
    """ARC refuses every read (the real adapter, ARC stubbed to deny): the pass still decides, and publishes
    karpenter_zonal_shift_read_errors_total for the read its offerings made; a pass without failures publishes none."""
    clients = AWSClients("us-west-2")
    client = boto3.client("arc-zonal-shift", region_name="us-west-2", aws_access_key_id="x", aws_secret_access_key="x")
    clients.__dict__["arc_zonal_shift"] = client
    stub = Stubber(client)
    stub.add_client_error("get_managed_resource", "AccessDeniedException", "not authorized")
    stub.activate()
    nodepool = pool(disruption={"budgets": [{"nodes": "1"}]})
    world = World.of(
        nodepool,
        *_nodes(2, nodepool),
        cloud=FakeCloud(zonal_shifts=ArcZonalShifts(clients, lambda: ARN, lambda: NOW)),
    )

    def counted(result: DisruptionResult | None) -> list[float]:
        assert result is not None
        return [p.value for p in result.metric_points() if p.name == m.ZONAL_SHIFT_READ_ERRORS]

    first = world.controller().run()
    assert counted(first) == [1] and first is not None and first.summary()["zonal_shift_read_errors"] == 1
    assert first.outcome.deleted  # ARC unreadable is never a reason to stop
    stub.assert_no_pending_responses()
    assert counted(world.controller().run()) == []  # the next pass within ARC's 30 s reads nothing again
