"""The disruption function end to end: the real disruption handler over moto and the Kubernetes API emulator, with
the real provisioner (launching replacements), nodeclass (re-resolving AMIs) and termination (draining) handlers.

Each test provisions real NodeClaims and instances, joins their nodes with the kubelet simulator, then changes
the world (a new AMI, a NodePool edit, the clock, a PodDisruptionBudget, lighter load) and checks what the next
disruption passes decide and do."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from autoscaler.apis.v1 import labels as wk
from autoscaler_dev.world.aws_world import AWSWorld
from tests.functional.disruption.world import AL2023_X86, DisruptionWorld, condition, fits

BIG = ("1500m", "1Gi")  # one to an m5.large


@pytest.fixture
def world(aws_world: AWSWorld, monkeypatch: pytest.MonkeyPatch) -> Iterator[DisruptionWorld]:
    with DisruptionWorld.start(aws_world, monkeypatch) as world:
        yield world


@pytest.fixture
def new_ami(aws_world: AWSWorld) -> Iterator[str]:
    """A new EKS AL2023 x86_64 AMI published under the recommended SSM parameter; the old one is published
    again afterwards (the moto account is shared by the session's tests)."""
    old = aws_world.images["al2023/x86_64/standard"]
    image = aws_world.add_image("eks-al2023-x86_64-standard-next", "x86_64", datetime(2026, 6, 1, tzinfo=UTC))
    yield image
    aws_world.seed_parameter(AL2023_X86, old)


def test_new_ami_rolls_nodes_one_at_a_time(world: DisruptionWorld, aws_world: AWSWorld, new_ami: str) -> None:
    """A new AMI behind al2023@latest drifts every node (AMIDrift names old and new AMI); a budget of one node
    replaces them one per pass, each old node deleted only once its replacement is initialized."""
    world.setup(disruption={"budgets": [{"nodes": "1"}]})
    placed = world.provision([(f"web-{i}", *BIG) for i in range(3)])
    originals = {c.name for c in world.nodeclaims()}
    assert len(originals) == 3 == len(set(placed.values()))
    old_ami = aws_world.images["al2023/x86_64/standard"]

    quiet = world.disrupt()
    assert quiet["newly_drifted"] == {} and quiet["command"] is None, quiet

    aws_world.seed_parameter(AL2023_X86, new_ami)
    world.resolve_nodeclasses()
    status = world.kube.get(wk.AWS_API_VERSION, "EC2NodeClass", world.pool)["status"]
    assert new_ami in {a["id"] for a in status["amis"]}

    summary = world.disrupt()
    assert summary["newly_drifted"] == dict.fromkeys(originals, "AMIDrift"), summary
    for name in originals:
        drifted = condition(world.nodeclaim(name), "Drifted")
        assert drifted is not None and drifted.reason == "AMIDrift"
        assert old_ami in drifted.message and new_ami in drifted.message
    replaced: list[str] = []
    for _ in range(3):
        (started,) = summary["started"]
        (replacement,) = summary["replacements_created"]
        assert started in originals and started not in replaced
        node = world.node(world.nodeclaim(started))
        assert {"key": wk.TAINT_DISRUPTED, "effect": "NoSchedule"} in node["spec"]["taints"]
        assert world.nodeclaim(replacement).metadata.annotations["serverless-karpenter.io/replaces"] == started

        world.provisioner_pass()  # launches the replacement
        assert len(world.instances()) <= 3 + 1  # never more than the budget beyond the pool's size
        waiting = world.disrupt()  # not initialized yet: the old node stays
        assert started in waiting["waiting"] and waiting["deleted"] == {}, waiting
        assert world.nodeclaim(started).metadata.deletion_timestamp is None

        world.join_and_initialize()
        done = world.disrupt()
        assert done["deleted"] == {started: "Drifted"}, done
        assert done["started"] == [], "the node being deleted still holds the budget"
        assert world.nodeclaim(started).metadata.deletion_timestamp is not None
        replaced.append(started)
        on_old = {p["metadata"]["name"] for p in world.pods_on(world.nodeclaim(started).status.node_name)}
        evicted = world.terminate()  # the real termination function drains and terminates the old node
        assert set(evicted) == on_old and len(on_old) == 1
        world.reschedule(evicted, world.nodeclaim(replacement).status.node_name)
        assert len(world.instances()) == 3
        summary = world.disrupt()
    assert summary["started"] == [] and summary["command"] is None, summary
    assert set(replaced) == originals
    assert not originals & {c.name for c in world.nodeclaims()}
    assert len(world.instances()) == 3
    assert all(i["ImageId"] == new_ami for i in world.instances())


def add_template_label(world: DisruptionWorld) -> None:
    pool = world.nodepool()
    pool["spec"]["template"]["metadata"]["labels"]["tier"] = "frontend"
    world.kube.apply(pool)


def test_nodepool_template_edit_drifts_nodes(world: DisruptionWorld) -> None:
    """A new template label changes the NodePool's hash: its NodeClaims are NodePoolDrifted and replaced."""
    world.setup()
    world.provision([("web-0", *BIG)])
    (claim,) = world.nodeclaims()
    add_template_label(world)

    summary = world.disrupt()
    assert summary["newly_drifted"] == {claim.name: "NodePoolDrifted"}, summary
    drifted = condition(world.nodeclaim(claim.name), "Drifted")
    assert drifted is not None and drifted.status == "True" and "hash changed" in drifted.message
    assert summary["started"] == [claim.name] and len(summary["replacements_created"]) == 1
    (replacement,) = summary["replacements_created"]
    assert world.nodeclaim(replacement).metadata.labels["tier"] == "frontend"


def test_budget_window_holds_drift_until_it_closes(world: DisruptionWorld) -> None:
    """A zero budget for Drifted, in a window active at the drift pass's clock, starts nothing; a pass after
    the window (the clock two hours on) starts the replacement."""
    now = datetime.now(UTC)
    window = {"nodes": "0", "reasons": ["Drifted"], "schedule": f"{now.minute} {now.hour} * * *", "duration": "1h"}
    world.setup(disruption={"budgets": [window, {"nodes": "100%"}]})
    world.provision([("web-0", *BIG)])
    (claim,) = world.nodeclaims()
    add_template_label(world)

    held = world.disrupt()
    assert held["newly_drifted"] == {claim.name: "NodePoolDrifted"}, held
    assert held["command"] is None and held["started"] == [] and held["replacements_created"] == [], held
    assert not any(t["key"] == wk.TAINT_DISRUPTED for t in world.node(claim)["spec"].get("taints") or ())

    world.advance(timedelta(hours=2))
    after = world.disrupt()
    assert after["started"] == [claim.name] and len(after["replacements_created"]) == 1, after
    assert after["command"].startswith("Drifted: replace")


def test_expired_nodeclaim_is_deleted_despite_a_zero_budget(world: DisruptionWorld) -> None:
    """expireAfter is forceful: past it the NodeClaim is deleted even though no budget allows any disruption."""
    world.setup(disruption={"budgets": [{"nodes": "0"}]})
    world.provision([("web-0", *BIG)])
    (claim,) = world.nodeclaims()
    assert claim.spec.expire_after == "168h"

    young = world.disrupt()
    assert young["expired"] == [] and young["deleted"] == {}, young
    world.advance(timedelta(hours=169))
    old = world.disrupt()
    assert old["expired"] == [claim.name] and old["deleted"] == {claim.name: "Expired"}, old
    assert world.nodeclaim(claim.name).metadata.deletion_timestamp is not None


UNDERUTILIZED = {"consolidateAfter": "0s", "consolidationPolicy": "WhenEmptyOrUnderutilized"}


def test_pod_disruption_budget_blocks_consolidation(world: DisruptionWorld) -> None:
    """An m5.xlarge left with two small pods would be replaced by an m5.large, unless a PDB with minAvailable
    equal to the pods' count covers them: then no command, and the node is not tainted."""
    world.setup(instance_types=("m5.large", "m5.xlarge"), disruption=UNDERUTILIZED)
    placed = world.provision([("big-0", "3", "4Gi")])
    (claim,) = world.nodeclaims()
    assert claim.metadata.labels[wk.LABEL_INSTANCE_TYPE] == "m5.xlarge"
    (node,) = set(placed.values())
    world.kube.delete("v1", "Pod", "big-0")
    for i in range(2):
        world.running_pod(f"small-{i}", node, "100m", "256Mi", {"app": "guarded"})
    pdb = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "guarded", "namespace": "default"},
        "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "guarded"}}},
    }
    world.kube.create(pdb)

    blocked = world.disrupt()
    assert condition(world.nodeclaim(claim.name), "Consolidatable") is not None
    assert blocked["command"] is None and blocked["started"] == [], blocked
    assert not any(t["key"] == wk.TAINT_DISRUPTED for t in world.node(claim)["spec"].get("taints") or ())

    world.kube.delete("policy/v1", "PodDisruptionBudget", "guarded")
    free = world.disrupt()
    assert free["started"] == [claim.name], free
    assert free["command"].startswith("Underutilized: replace") and "(m5.large)" in free["command"], free
    assert {"key": wk.TAINT_DISRUPTED, "effect": "NoSchedule"} in world.node(claim)["spec"]["taints"]


def test_ten_light_nodes_consolidate_onto_one(world: DisruptionWorld) -> None:
    """Ten m5.large nodes each left with one small pod, the pool since widened to m5.xlarge (requirements are not
    hashed, and m5.large still meets them: no drift): one multi-node command replaces all ten with a single
    m5.xlarge (Karpenter never replaces several nodes with one of their own type); once it is up the ten are
    deleted and drained, and every pod fits what remains."""
    world.setup(disruption={**UNDERUTILIZED, "budgets": [{"nodes": "100%"}]})
    placed = world.provision([(f"web-{i}", *BIG) for i in range(10)])
    originals = {c.name for c in world.nodeclaims()}
    assert len(originals) == 10 == len(set(placed.values()))
    pool = world.nodepool()
    pool["spec"]["template"]["spec"]["requirements"][-1]["values"] = ["m5.large", "m5.xlarge"]
    world.kube.apply(pool)
    world.shrink(placed, cpu="200m", memory="512Mi")  # ten of them no longer fit one m5.large

    summary = world.disrupt()
    assert set(summary["started"]) == originals, summary
    (replacement,) = summary["replacements_created"]
    assert summary["command"].startswith("Underutilized: replace"), summary
    saving = float(summary["command"].rsplit("$", 1)[1].split("/")[0])
    assert saving > 0  # the replacement is cheaper than the ten together
    assert "with 1 new node(s) (m5.xlarge)" in summary["command"]
    new = world.nodeclaim(replacement)
    assert set(new.metadata.annotations["serverless-karpenter.io/replaces"].split(",")) == originals

    world.provisioner_pass()
    assert len(world.instances()) == 11
    world.join_and_initialize()
    done = world.disrupt()
    assert done["deleted"] == dict.fromkeys(originals, "Underutilized"), done
    evicted = world.terminate()
    assert set(evicted) == set(placed)
    target = world.nodeclaim(replacement).status.node_name
    world.reschedule(evicted, target)

    (remaining,) = world.nodeclaims()
    assert remaining.name == replacement and len(world.instances()) == 1
    assert fits(world.kube.get("v1", "Node", target), world.pods_on(target))
    assert len(world.pods_on(target)) == 10
    assert world.nodeclaim(replacement).metadata.labels[wk.LABEL_INSTANCE_TYPE] == "m5.xlarge"
    settled = world.disrupt()
    assert settled["command"] is None, settled
