"""Nominations until bound: the pods a NodeClaim was created for stay on it after it initializes, until the
kube-scheduler binds them or the nomination lapses (``NOMINATION_WINDOW``).

The burst that used to overshoot: pods of two shapes become NodeClaims; the NodeClaims launch (as the cheapest
option they allow), join and initialize; the pods are still pending when the next pass runs (the kube-scheduler
binds them a moment later). That pass used to pack them afresh, largest first, onto the new nodes in another
order and launch more nodes for the pods left over, which then sat empty.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from autoscaler.apis.resources import format_resources
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.nodeclaim import NodeClaim, NodeClaimStatus
from autoscaler.controllers.state import ClusterState
from autoscaler.controllers.state.inflight import NOMINATION_WINDOW
from tests.support.memory_cluster import MemoryCluster
from tests.unit.controllers.lifecycle_doubles import NOW
from tests.unit.controllers.provisioning_doubles import CATALOGUE, pending_pod
from tests.unit.controllers.test_provisioning import cluster_with, controller, provision

BURST = [pending_pod(f"small-{i}", "900m", "3100Mi") for i in range(13)] + [
    pending_pod(f"large-{i}", "3500m", "14Gi") for i in range(7)
]


def launched_and_initialized(cluster: MemoryCluster, claim: NodeClaim, number: int, at: str) -> None:
    """``claim`` launched as the cheapest instance type it allows, its Node joined and initialized at ``at``."""
    allowed = next(r.values for r in claim.spec.requirements if r.key == wk.LABEL_INSTANCE_TYPE)
    chosen = min((t for t in CATALOGUE if t.name in allowed), key=lambda t: t.cheapest_price())
    provider_id = f"aws:///us-west-2a/i-{number:017x}"
    labels = {
        **(claim.metadata.labels or {}),
        wk.LABEL_INSTANCE_TYPE: chosen.name,
        wk.LABEL_ZONE: "us-west-2a",
        wk.LABEL_CAPACITY_TYPE: "on-demand",
        wk.LABEL_HOSTNAME: f"ip-{number}",
        wk.LABEL_INITIALIZED: "true",
    }
    allocatable, capacity = format_resources(chosen.allocatable), format_resources(chosen.capacity)
    condition = {"type": "Initialized", "status": "True", "reason": "Initialized", "lastTransitionTime": at}
    status = NodeClaimStatus.model_validate(
        {
            "providerID": provider_id,
            "nodeName": f"ip-{number}",
            "allocatable": allocatable,
            "capacity": capacity,
            "conditions": [condition],
        }
    )
    metadata = claim.metadata.model_copy(update={"labels": labels})
    cluster.add(claim.model_copy(update={"metadata": metadata, "status": status}))
    node: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": f"ip-{number}", "labels": labels},
        "spec": {"providerID": provider_id},
        "status": {
            "allocatable": allocatable,
            "capacity": capacity,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }
    cluster.add(node)


def burst_on_initialized_nodes(initialized_ago: timedelta) -> tuple[MemoryCluster, list[NodeClaim]]:
    cluster = cluster_with(*BURST)
    first = provision(cluster)
    at = (NOW - initialized_ago).strftime("%Y-%m-%dT%H:%M:%SZ")
    for number, claim in enumerate(first.created, start=1):
        launched_and_initialized(cluster, cluster.nodeclaim(claim.name) or claim, number, at)
    return cluster, first.created


def test_a_burst_on_just_initialized_nodes_launches_nothing_more() -> None:
    cluster, created = burst_on_initialized_nodes(timedelta(seconds=20))
    second = provision(cluster)
    assert second.created == [], f"{len(second.created)} more NodeClaims for pods that already have nodes"
    assert len(second.plan.held) == len(BURST)  # every pod held where it was nominated
    assert set(second.plan.held.values()) == {f"ip-{n}" for n in range(1, len(created) + 1)}


def test_a_lapsed_nomination_schedules_its_pods_again() -> None:
    cluster, _ = burst_on_initialized_nodes(NOMINATION_WINDOW + timedelta(seconds=1))
    again = controller(cluster).plan(ClusterState.read(cluster))
    assert again.held == {}
    assert {p.name for p in again.placements} == {p["metadata"]["name"] for p in BURST}


def test_a_bound_pod_is_no_longer_held() -> None:
    cluster, _ = burst_on_initialized_nodes(timedelta(seconds=20))
    pod = cluster.stored("Pod", "small-0", "default")
    assert pod is not None
    pod["spec"]["nodeName"], pod["status"] = "ip-1", {"phase": "Running"}
    plan = controller(cluster).plan(ClusterState.read(cluster))
    assert "small-0" not in {p.name for p in plan.held} and len(plan.held) == len(BURST) - 1
