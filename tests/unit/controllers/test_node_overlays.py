"""NodeOverlays in the provisioner pass: the gate on, an overlay changes which instance types a NodeClaim lists and
its status is written; the gate off, the choice is unchanged and the overlay gets a warning."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from autoscaler.apis.feature_gates import EVENT_REASON
from autoscaler.apis.v1 import labels as wk
from autoscaler.cloudprovider.unavailable import InMemoryUnavailableOfferings
from autoscaler.controllers.provisioner_pass import PassResult, ProvisionerPass
from autoscaler.controllers.provisioning.events import EventThrottle
from autoscaler.settings import FeatureGates
from tests.support.memory_cluster import MemoryCluster
from tests.unit.controllers.lifecycle_doubles import NOW, FakeCloud
from tests.unit.controllers.provisioning_doubles import FakeCatalogue, nodepool, pending_pod, ready_nodeclass

LICENSE = "example.com/license"


@dataclass
class Cloud(FakeCatalogue, FakeCloud):
    """The catalogue for scheduling and the launching cloud for the lifecycle step."""


def overlay(name: str, **spec: Any) -> dict[str, Any]:
    requirements = [{"key": wk.LABEL_INSTANCE_TYPE, "operator": "In", "values": ["m5.2xlarge"]}]
    return {
        "apiVersion": "karpenter.sh/v1alpha1",
        "kind": "NodeOverlay",
        "metadata": {"name": name, "uid": f"uid-{name}"},
        "spec": {"requirements": requirements, **spec},
    }


def licensed_pod() -> dict[str, Any]:
    pod = pending_pod("licensed")
    pod["spec"]["containers"][0]["resources"]["requests"][LICENSE] = "1"
    return pod


def run(cluster: MemoryCluster, gates: FeatureGates, cloud: Cloud | None = None) -> PassResult:
    throttle = EventThrottle(clock=lambda: 0.0)
    return ProvisionerPass(
        cluster,
        cloud or Cloud(),
        InMemoryUnavailableOfferings(),
        clock=lambda: NOW,
        throttle=throttle,
        feature_gates=gates,
    ).run()


def marks(cluster: MemoryCluster) -> list[set[str]]:
    overlay_keys = {wk.ANNOTATION_PRICE_OVERLAY_APPLIED, wk.ANNOTATION_CAPACITY_OVERLAY_APPLIED}
    return [
        {k for k, v in (c.metadata.annotations or {}).items() if k in overlay_keys and v == "true"}
        for c in cluster.nodeclaims()
    ]


def listed_types(cluster: MemoryCluster) -> list[list[str]]:
    claims = cluster.nodeclaims()
    return [next(list(r.values or []) for r in c.spec.requirements if r.key == wk.LABEL_INSTANCE_TYPE) for c in claims]


def test_a_capacity_overlay_makes_the_only_type_that_fits() -> None:
    cluster = MemoryCluster(nodepool(), ready_nodeclass(), overlay("license", capacity={LICENSE: "4"}), licensed_pod())
    result = run(cluster, FeatureGates(node_overlay=True))
    assert listed_types(cluster) == [["m5.2xlarge"]]
    assert marks(cluster) == [{wk.ANNOTATION_CAPACITY_OVERLAY_APPLIED}]
    assert result.overlays is not None and result.overlays.applied == ["license"]
    stored = cluster.stored("NodeOverlay", "license")
    assert stored is not None
    conditions = {c["type"]: c["status"] for c in stored["status"]["conditions"]}
    assert conditions == {"ValidationSucceeded": "True", "Ready": "True"}


def test_with_the_gate_off_the_overlay_changes_nothing() -> None:
    cluster = MemoryCluster(nodepool(), ready_nodeclass(), overlay("license", capacity={LICENSE: "4"}), licensed_pod())
    result = run(cluster, FeatureGates())
    assert cluster.nodeclaims() == [] and len(result.provisioning.plan.unschedulable) == 1
    assert result.overlays is None
    assert any(e.reason == EVENT_REASON for e in cluster.events)


def test_a_price_overlay_makes_its_type_the_cheapest_choice() -> None:
    cluster = MemoryCluster(nodepool(), ready_nodeclass(), overlay("cheap", price="0.01"), pending_pod("web"))
    cloud = Cloud()
    decision = run(cluster, FeatureGates(node_overlay=True), cloud).provisioning.plan.nodeclaims[0].decision
    assert decision.instance_types[0].name == "m5.2xlarge" and decision.cheapest_price == 0.01
    # Marked for the launch, which is given the pass's overlaid prices to follow.
    assert marks(cluster) == [{wk.ANNOTATION_PRICE_OVERLAY_APPLIED}]
    (given,) = cloud.overlays
    assert given is not None and given.applied == ["cheap"]


def test_without_overlays_nodeclaims_are_not_marked() -> None:
    cluster = MemoryCluster(nodepool(), ready_nodeclass(), pending_pod("web"))
    cloud = Cloud()
    run(cluster, FeatureGates(node_overlay=True), cloud)
    assert marks(cluster) == [set()]


def test_equal_weight_overlays_conflict_in_status() -> None:
    cluster = MemoryCluster(
        nodepool(), ready_nodeclass(), overlay("a", price="1"), overlay("b", price="2"), pending_pod("web")
    )
    result = run(cluster, FeatureGates(node_overlay=True))
    assert result.overlays is not None and sorted(result.overlays.conflicts) == ["a"]
    stored = cluster.stored("NodeOverlay", "a")
    assert stored is not None
    reasons = {c["type"]: (c["status"], c["reason"]) for c in stored["status"]["conditions"]}
    assert reasons["ValidationSucceeded"] == ("False", "Conflict")
