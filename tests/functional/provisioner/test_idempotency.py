"""The provisioner's guarantees when Lambda repeats a batch or an invocation dies half way: one instance per
NodeClaim, and no NodeClaim twice for the same pods."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from autoscaler.apis.v1 import labels as wk
from autoscaler.controllers.lifecycle import LifecycleController
from autoscaler.kube.client import KubernetesCluster
from autoscaler_dev.harness import InvocationDied
from autoscaler_dev.world.aws_world import AWSWorld
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


def one_instance_per_nodeclaim(world: ProvisionerWorld) -> None:
    claims = {c.name: c for c in world.nodeclaims()}
    tagged = Counter(next(t["Value"] for t in i["Tags"] if t["Key"] == wk.TAG_NODECLAIM) for i in world.instances())
    assert set(tagged) == set(claims) and set(tagged.values()) == {1}, tagged
    for claim in claims.values():
        assert claim.status is not None and claim.status.provider_id


def spread_pods(world: ProvisionerWorld, count: int, start: int = 0) -> None:
    """Pods that each need a node of their own: identical NodeClaims, launched together in one CreateFleet."""
    for i in range(start, start + count):
        world.pending_pod(f"spread-{i}", "500m", "1Gi", labels={"app": "spread"}, affinity=SPREAD)


def test_the_same_batch_twice_launches_nothing_twice(world: ProvisionerWorld) -> None:
    world.setup()
    spread_pods(world, 3)
    world.publish("Pod Unschedulable", "spread", age=5)  # observed a few seconds before the pass
    records = world.receive()
    first = world.invoke(records, ack=False)["pass"]
    assert first["nodeclaims_created"] == first["launched"] == 3

    again = world.invoke(records, ack=False)["pass"]  # delivered again: every event predates the last pass
    assert again == {"skipped": "every event predates the last completed pass"}

    world.forget_last_pass()
    world.new_execution_environment()  # another sandbox: no cache of anything
    third = world.invoke(records)["pass"]
    assert third["pods"] == 3 and third["nodeclaims_created"] == 0 and third["launched"] == 0
    assert len(world.nodeclaims()) == 3
    one_instance_per_nodeclaim(world)


def test_a_pass_cut_short_after_creating_nodeclaims_launches_each_once_next_time(
    world: ProvisionerWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    world.setup()
    spread_pods(world, 3)
    world.publish("Pod Unschedulable", "spread")
    records = world.receive()

    def die(*_: Any, **__: Any) -> Any:
        raise InvocationDied("the invocation timed out before launching")

    with monkeypatch.context() as patch:
        patch.setattr(LifecycleController, "reconcile", die)
        with pytest.raises(InvocationDied):
            world.invoke(records)
    assert len(world.nodeclaims()) == 3 and world.instances() == []

    world.new_execution_environment()
    result = world.invoke(records)["pass"]  # Lambda delivers the batch again after the visibility timeout
    assert result["nodeclaims_created"] == 0 and result["launched"] == 3
    one_instance_per_nodeclaim(world)


def test_a_pass_cut_short_between_launch_and_record_finds_its_instances(
    world: ProvisionerWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    world.setup()
    spread_pods(world, 3)
    world.publish("Pod Unschedulable", "spread")
    records = world.receive()
    real_write = KubernetesCluster.write_status

    def die_on_nodeclaims(cluster: KubernetesCluster, obj: Any) -> Any:
        if obj.kind == "NodeClaim":
            raise InvocationDied("the invocation timed out before recording the launch")
        return real_write(cluster, obj)

    with monkeypatch.context() as patch:
        patch.setattr(KubernetesCluster, "write_status", die_on_nodeclaims)
        with pytest.raises(InvocationDied):
            world.invoke(records)
    assert len(world.instances()) == 3  # launched in one CreateFleet call, never recorded
    assert all(not (c.status and c.status.provider_id) for c in world.nodeclaims())

    spread_pods(world, 1, start=3)  # meanwhile a fourth pod: the retry launches four identical NodeClaims at once
    world.new_execution_environment()
    result = world.invoke(records)["pass"]
    assert result["nodeclaims_created"] == 1 and result["launched"] == 4
    assert len(world.instances()) == 4
    one_instance_per_nodeclaim(world)
