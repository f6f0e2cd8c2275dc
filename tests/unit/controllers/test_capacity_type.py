"""Reserved nodes whose reservation ended, relabelled on-demand by the garbage collection pass (Karpenter's
capacityreservation.capacitytype controller), over the in-memory Kubernetes and cloud ports."""

from __future__ import annotations

from autoscaler.apis.v1 import labels as wk
from autoscaler.controllers.garbage_collection import metric_points
from autoscaler.metrics import GC_CAPACITY_TYPE_DEMOTED, MetricPoint
from tests.support.memory_cloud import MemoryCloud
from tests.support.memory_cluster import MemoryCluster
from tests.unit.controllers.garbage_collection_builders import instance, node, nodeclaim, nodeclass
from tests.unit.controllers.test_garbage_collection import collector

RESERVED = {
    wk.LABEL_CAPACITY_TYPE: wk.CAPACITY_TYPE_RESERVED,
    wk.LABEL_CAPACITY_RESERVATION_ID: "cr-0123456789abcdef0",
    wk.LABEL_CAPACITY_RESERVATION_TYPE: "default",
    wk.LABEL_CAPACITY_RESERVATION_INTERRUPTIBLE: "false",
    wk.LABEL_INSTANCE_TYPE: "m5.large",
}
REGISTERED = {**RESERVED, wk.LABEL_REGISTERED: "true"}


def labels(cluster: MemoryCluster, kind: str, name: str) -> dict[str, str]:
    stored = cluster.stored(kind, name)
    assert stored is not None
    return dict(stored["metadata"].get("labels") or {})


def demoted(reserved: dict[str, str]) -> dict[str, str]:
    """The labels of a reserved object as on-demand: no reservation labels, the rest kept."""
    kept = {k: v for k, v in reserved.items() if "capacity-reservation" not in k}
    return {**kept, wk.LABEL_CAPACITY_TYPE: wk.CAPACITY_TYPE_ON_DEMAND}


def test_a_reserved_nodeclaim_and_its_node_turn_on_demand_when_the_instance_does() -> None:
    cluster = MemoryCluster(
        nodeclass("default"),
        nodeclaim("ended", "i-ended", registered=True, labels=RESERVED),
        node("ended-node", "i-ended", ready=True, labels=REGISTERED),
        nodeclaim("still", "i-still", registered=True, labels=RESERVED),
        node("still-node", "i-still", ready=True, labels=REGISTERED),
    )
    cloud = MemoryCloud(instance("i-ended", capacity_type="on-demand"), instance("i-still", capacity_type="reserved"))
    before = {name: labels(cluster, "NodeClaim", name) for name in ("ended", "still")}
    report = collector(cluster, cloud).run("pass-1")

    assert report.demoted == ["NodeClaim/ended", "Node/ended-node"]
    assert labels(cluster, "NodeClaim", "ended") == demoted(before["ended"])
    assert labels(cluster, "Node", "ended-node") == demoted(REGISTERED)
    assert labels(cluster, "NodeClaim", "still") == before["still"]  # its reservation still holds it
    assert labels(cluster, "Node", "still-node") == REGISTERED
    assert MetricPoint(GC_CAPACITY_TYPE_DEMOTED, 2) in metric_points(report)
    assert not report.collected and not report.failures

    again = collector(cluster, cloud).run("pass-2")  # converged
    assert again.demoted == [] and MetricPoint(GC_CAPACITY_TYPE_DEMOTED, 0) in metric_points(again)


def test_deleting_and_unregistered_objects_are_left_and_only_reserved_ones_change() -> None:
    unregistered = {k: v for k, v in REGISTERED.items() if k != wk.LABEL_REGISTERED}
    cluster = MemoryCluster(
        nodeclass("default"),
        nodeclaim("draining", "i-draining", registered=True, deleting=True, labels=RESERVED),
        nodeclaim("joining", "i-joining", labels=RESERVED),
        node("joining-node", "i-joining", ready=False, labels=unregistered),
        nodeclaim("plain", "i-plain", registered=True, labels={wk.LABEL_CAPACITY_TYPE: wk.CAPACITY_TYPE_ON_DEMAND}),
        nodeclaim("spot", "i-spot", registered=True, labels=RESERVED),
    )
    cloud = MemoryCloud(
        instance("i-draining", capacity_type="on-demand"),
        instance("i-joining", capacity_type="on-demand"),
        instance("i-plain", capacity_type="on-demand"),
        instance("i-spot", capacity_type="spot"),  # never demoted to anything but on-demand
    )
    before = {name: labels(cluster, "NodeClaim", name) for name in ("draining", "joining", "plain", "spot")}
    report = collector(cluster, cloud).run("pass-1")

    assert report.demoted == ["NodeClaim/joining"]  # its Node's labels follow once it registers
    assert labels(cluster, "NodeClaim", "joining") == demoted(before["joining"])
    assert labels(cluster, "Node", "joining-node") == unregistered
    for unchanged in ("draining", "plain", "spot"):
        assert labels(cluster, "NodeClaim", unchanged) == before[unchanged]
