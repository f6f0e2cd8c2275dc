"""The provisioning controller's decisions over an in-memory cluster and catalogue: which NodeClaims, built how,
which events, and what never happens twice."""

from __future__ import annotations

from typing import Any

from autoscaler import metrics as m
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.hashing import NODEPOOL_HASH_VERSION, nodepool_hash
from autoscaler.apis.v1.nodeclaim import NodeClaim, NodeClaimStatus
from autoscaler.cloudprovider.errors import NodeClassNotReadyError, OfferingKey
from autoscaler.cloudprovider.unavailable import InMemoryUnavailableOfferings
from autoscaler.controllers.provisioning import ProvisioningController
from autoscaler.controllers.provisioning.events import EventThrottle
from autoscaler.controllers.state import ClusterState
from tests.support.memory_cluster import MemoryCluster
from tests.unit.controllers.lifecycle_doubles import NOW
from tests.unit.controllers.provisioning_doubles import FakeCatalogue, nodepool, pending_pod, ready_nodeclass


def controller(
    cluster: MemoryCluster, catalogue: FakeCatalogue | None = None, **options: Any
) -> ProvisioningController:
    options.setdefault("clock", lambda: NOW)
    options.setdefault("throttle", EventThrottle(clock=lambda: 0.0))
    unavailable = options.pop("unavailable", InMemoryUnavailableOfferings())
    return ProvisioningController(cluster, catalogue or FakeCatalogue(), unavailable, **options)


def cluster_with(*pods: dict[str, Any], **pool: Any) -> MemoryCluster:
    cluster = MemoryCluster(nodepool(**pool), ready_nodeclass(**{wk.ANNOTATION_NODECLASS_HASH: "42"}))
    for pod in pods:
        cluster.add(pod)
    return cluster


def provision(cluster: MemoryCluster, **options: Any) -> Any:
    return controller(cluster, **options).provision(ClusterState.read(cluster))


def test_pending_pods_become_one_nodeclaim_built_as_karpenter_builds_it() -> None:
    cluster = cluster_with(
        *(pending_pod(f"web-{i}", "500m", "1Gi") for i in range(3)),
        labels={"team": "web"},
        template_spec={
            "taints": [{"key": "dedicated", "value": "web", "effect": "NoSchedule"}],
            "startupTaints": [{"key": "cni", "effect": "NoSchedule"}],
            "expireAfter": "24h",
            "terminationGracePeriod": "1h",
        },
    )
    for name in ("web-0", "web-1", "web-2"):
        cluster.stored("Pod", name, "default")["spec"]["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
    result = provision(cluster)
    (claim,) = result.created
    pool = cluster.nodepool("default")
    assert claim.name.startswith("default-") and claim.metadata.uid
    assert claim.metadata.labels == {"team": "web", wk.LABEL_NODEPOOL: "default", wk.LABEL_NODECLASS: "default"}
    assert claim.metadata.annotations == {
        wk.ANNOTATION_NODEPOOL_HASH: nodepool_hash(pool),
        wk.ANNOTATION_NODEPOOL_HASH_VERSION: NODEPOOL_HASH_VERSION,
        wk.ANNOTATION_NODECLASS_HASH: "42",
        wk.ANNOTATION_NOMINATED_PODS: "uid-web-0,uid-web-1,uid-web-2",
    }
    assert claim.metadata.finalizers == [wk.FINALIZER_TERMINATION]
    (owner,) = claim.metadata.owner_references
    assert owner.model_dump(by_alias=True, exclude_none=True) == {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "name": "default",
        "uid": "uid-default",
        "blockOwnerDeletion": True,
    }
    spec = claim.spec
    assert [t.key for t in spec.taints] == ["dedicated"] and [t.key for t in spec.startup_taints] == ["cni"]
    assert (spec.expire_after, spec.termination_grace_period) == ("24h", "1h")
    keys = {r.key: r for r in spec.requirements}
    assert keys[wk.LABEL_CAPACITY_TYPE].values == ["on-demand"]
    assert keys[wk.LABEL_INSTANCE_TYPE].values and "m5.large" in keys[wk.LABEL_INSTANCE_TYPE].values
    assert spec.resources.requests["cpu"] == "1500m"
    nominated = [e for e in cluster.events if e.reason == "Nominated"]
    assert {e.regarding.name for e in nominated} == {"web-0", "web-1", "web-2"}
    assert all(e.message == f"Pod should schedule on: nodeclaim/{claim.name}" for e in nominated)


def test_a_second_pass_sees_the_unlaunched_nodeclaim_and_creates_nothing() -> None:
    cluster = cluster_with(*(pending_pod(f"web-{i}") for i in range(3)))
    first = provision(cluster)
    second = provision(cluster)
    assert first.created and second.created == []
    # every pod is held for a NodeClaim of the first pass (repacking may split them over cheaper, smaller nodes)
    held = {pod.name: name for pod, name in second.plan.held.items()}
    assert set(held) == {f"web-{i}" for i in range(3)} and set(held.values()) == {c.name for c in first.created}


def test_pods_no_nodepool_can_run_get_one_failed_scheduling_event_each() -> None:
    cluster = cluster_with(pending_pod("huge", "64", "1Gi"), pending_pod("fine"))
    ctl = controller(cluster)
    result = ctl.provision(ClusterState.read(cluster))
    assert {p.name for p in result.plan.unschedulable} == {"huge"}
    (event,) = [e for e in cluster.events if e.reason == "FailedScheduling"]
    assert event.type == "Warning" and event.regarding.name == "huge" and event.regarding.uid == "uid-huge"
    assert event.message.startswith("Failed to schedule pod, ") and "default" in event.message
    ctl.provision(ClusterState.read(cluster))  # again within five minutes: no second event
    assert len([e for e in cluster.events if e.reason == "FailedScheduling"]) == 1


def test_nodepools_that_cannot_launch_say_why_in_the_pods_reason() -> None:
    cluster = cluster_with(pending_pod("web"))
    catalogue = FakeCatalogue(errors={"default": NodeClassNotReadyError("EC2NodeClass 'default' has no subnets")})
    result = provision(cluster, catalogue=catalogue)
    assert result.created == []
    reason = result.plan.unschedulable[next(iter(result.plan.unschedulable))]
    assert "nodepool 'default' has no instance types now (EC2NodeClass 'default' has no subnets)" in reason


def test_a_nodepool_whose_class_is_missing_is_not_ready_and_says_so() -> None:
    cluster = MemoryCluster(nodepool(nodeclass="missing"), ready_nodeclass())
    cluster.add(pending_pod("web"))
    result = provision(cluster)
    assert result.plan.skipped_nodepools == {
        "default": "is not ready (NodeClassNotFound: NodeClass not found on cluster)"
    }


def test_a_nodepool_failing_runtime_validation_launches_nothing_and_says_why() -> None:
    cluster = cluster_with(pending_pod("web"), labels={"karpenter.k8s.aws/ec2nodeclass": "default"})
    result = provision(cluster)
    assert result.created == []
    reason = result.plan.skipped_nodepools["default"]
    assert reason.startswith('is not ready (NodePoolValidationFailed: labels: label "karpenter.k8s.aws/ec2nodeclass"')


def test_a_static_nodepool_does_not_launch_for_pending_pods() -> None:
    # Karpenter leaves static NodePools to their own controller (behind StaticCapacity), whatever pods are pending.
    cluster = cluster_with(pending_pod("web"), replicas=2)
    result = provision(cluster)
    assert result.created == []
    assert result.plan.skipped_nodepools == {
        "default": "is static (spec.replicas): it does not launch nodes for pending pods"
    }


def test_pods_that_opt_out_of_karpenter_are_left_alone() -> None:
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": wk.LABEL_NODEPOOL, "operator": "DoesNotExist"}]}]
            }
        }
    }
    cluster = cluster_with(pending_pod("static-ish", affinity=affinity))
    result = provision(cluster)
    assert result.created == [] and [p.name for p in result.plan.ignored_pods] == ["static-ish"]
    assert cluster.events == []


def test_unavailable_offerings_are_not_chosen() -> None:
    cluster = cluster_with(pending_pod("web"))
    unavailable = InMemoryUnavailableOfferings(lambda: NOW)
    for zone in ("us-west-2a", "us-west-2b"):
        unavailable.mark_unavailable(OfferingKey("m5.large", zone, "on-demand"), "test")
    (claim,) = provision(cluster, unavailable=unavailable).created
    options = next(r.values for r in claim.spec.requirements if r.key == wk.LABEL_INSTANCE_TYPE)
    assert "m5.large" not in options and options


def test_creation_stops_when_time_runs_short() -> None:
    cluster = cluster_with(pending_pod("web"))
    result = controller(cluster).provision(ClusterState.read(cluster), time_left=lambda: 10.0)
    assert result.created == [] and result.deferred == 1
    assert not [e for e in cluster.events if e.reason == "Nominated"]


def test_metrics_count_creations_and_the_queue() -> None:
    cluster = cluster_with(*(pending_pod(f"web-{i}") for i in range(2)), pending_pod("huge", "64"))
    points = {(p.name, p.dimensions): p.value for p in provision(cluster).points}
    created = (("capacity_type", ""), ("nodepool", "default"), ("reason", "provisioned"))
    assert points[(m.NODECLAIMS_CREATED, created)] == 1
    assert points[(m.SCHEDULER_QUEUE_DEPTH, ())] == 3 and points[(m.SCHEDULER_UNSCHEDULABLE_PODS, ())] == 1
    assert (m.SCHEDULING_DURATION, (("controller", "provisioner"),)) in points


def test_pods_of_a_deleting_node_are_provisioned_for_ahead_of_their_eviction() -> None:
    cluster = cluster_with()
    cluster.add(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "old", "deletionTimestamp": "2026-11-30T11:00:00Z", "labels": {}},
            "spec": {},
            "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "58"}},
        }
    )
    bound = pending_pod("moving")
    bound["spec"]["nodeName"] = "old"
    bound["status"] = {"phase": "Running"}
    cluster.add(bound)
    result = provision(cluster)
    assert len(result.created) == 1 and result.plan.pods == 1


def test_a_nodeclaim_requirement_set_survives_the_model() -> None:
    cluster = cluster_with(pending_pod("arm", nodeSelector={wk.LABEL_ARCH: "arm64"}))
    (claim,) = provision(cluster).created
    stored = cluster.nodeclaim(claim.name)
    assert isinstance(stored, NodeClaim)
    options = next(r.values for r in stored.spec.requirements if r.key == wk.LABEL_INSTANCE_TYPE)
    assert options == ["c6g.large"]


def test_pods_held_on_an_in_flight_nodeclaim_keep_their_places_and_others_use_the_room_left() -> None:
    """Hostname anti-affinity pods packed one per NodeClaim stay so, pass after pass; a new pod that fits the
    room left on one of them goes there, nominated to that NodeClaim."""
    spread = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "spread"}}, "topologyKey": wk.LABEL_HOSTNAME}
            ]
        }
    }
    pods = [pending_pod(f"spread-{i}", "500m", "1Gi", affinity=spread) for i in range(4)]
    for pod in pods:
        pod["metadata"]["labels"] = {"app": "spread"}
    cluster = cluster_with(*pods)
    first = provision(cluster)
    assert len(first.created) == 4
    for number, claim in enumerate(first.created):  # launched as m5.large: room for more than their pod
        status = NodeClaimStatus(
            provider_id=f"aws:///us-west-2a/i-{number}", allocatable={"cpu": "2", "memory": "7Gi", "pods": "29"}
        )
        cluster.add(cluster.nodeclaim(claim.name).model_copy(update={"status": status}))
    cluster.add(pending_pod("small", "100m", "128Mi"))
    second = provision(cluster)
    assert second.created == [] and len(second.plan.held) == 4
    (where,) = [w for p, w in second.plan.placements.items() if p.name == "small"]
    assert where.kind == "nodeclaim" and where.name in {c.name for c in first.created}
    nominated = [e for e in cluster.events if e.reason == "Nominated" and e.regarding.name == "small"]
    assert nominated and nominated[0].message == f"Pod should schedule on: nodeclaim/{where.name}"
