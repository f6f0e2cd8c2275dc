"""The NodeClaim lifecycle's decisions: launch, registration, initialization, liveness, and their idempotency."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from autoscaler import metrics as m
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.conditions import READY, get_condition
from autoscaler.apis.v1.nodeclaim import NodeClaim, NodeClaimStatus
from autoscaler.cloudprovider.errors import (
    CreateError,
    InsufficientCapacityError,
    NodeClassNotReadyError,
    OfferingKey,
    TransientCloudError,
)
from autoscaler.controllers.lifecycle import (
    INITIALIZED,
    INSUFFICIENT_CAPACITY,
    LAUNCHED,
    LIVENESS,
    NODECLASS_NOT_READY,
    REGISTERED,
    LifecycleController,
)
from autoscaler.kube.port import ForbiddenError, ObjectRef
from tests.support.memory_cluster import MemoryCluster
from tests.support.metrics import total
from tests.unit.controllers.lifecycle_doubles import ALLOCATABLE, NOW, FakeCloud, node, nodeclaim


class Clock:
    def __init__(self, now: datetime = NOW) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def world(*claims: NodeClaim) -> tuple[MemoryCluster, FakeCloud, LifecycleController, Clock]:
    cluster, cloud, clock = MemoryCluster(*claims), FakeCloud(), Clock()
    return cluster, cloud, LifecycleController(cluster, cloud, clock), clock


def run(cluster: MemoryCluster, controller: LifecycleController):  # type: ignore[no-untyped-def]
    return controller.reconcile(cluster.nodeclaims(), cluster.nodes())


def condition(cluster: MemoryCluster, name: str, condition_type: str) -> tuple[str, str]:
    claim = cluster.nodeclaim(name)
    found = get_condition(claim.status.conditions, condition_type)
    assert found is not None
    return found.status, found.reason or ""


def join(cluster: MemoryCluster, name: str, **options: object) -> str:
    """The kubelet of ``name``'s instance registers its Node; returns the node name."""
    claim = cluster.nodeclaim(name)
    node_name = f"ip-{name}"
    cluster.add(node(node_name, claim.status.provider_id, **options))  # type: ignore[arg-type]
    return node_name


# --- launch ------------------------------------------------------------------------------------------
def test_launch_records_the_instance_and_its_labels() -> None:
    cluster, _cloud, controller, _ = world(nodeclaim("a"))
    result = run(cluster, controller)
    assert result.launched == ["a"]
    claim = cluster.nodeclaim("a")
    assert claim.status.provider_id.startswith("aws:///us-west-2a/i-")
    assert claim.status.image_id == "ami-0123" and claim.status.allocatable == ALLOCATABLE
    assert claim.metadata.labels[wk.LABEL_INSTANCE_TYPE] == "m5.large"
    assert claim.metadata.labels[wk.LABEL_NODEPOOL] == "default"
    assert condition(cluster, "a", LAUNCHED) == ("True", LAUNCHED)
    assert condition(cluster, "a", REGISTERED) == ("Unknown", "NodeNotFound")
    assert condition(cluster, "a", READY)[0] == "Unknown"
    # one status write, then one label patch: nothing else
    assert cluster.writes == ["status NodeClaim/a", "patch NodeClaim/a"]


def test_a_second_pass_writes_nothing_and_launches_nothing() -> None:
    cluster, cloud, controller, _ = world(nodeclaim("a"))
    run(cluster, controller)
    writes, calls = list(cluster.writes), list(cloud.calls)
    result = run(cluster, controller)
    assert cluster.writes == writes and cloud.calls == calls and result.launched == []


def test_a_nodeclaim_with_a_provider_id_is_marked_launched_not_launched_again() -> None:
    claim = nodeclaim("adopted").model_copy(update={"status": NodeClaimStatus(provider_id="aws:///us-west-2a/i-1")})
    cluster, cloud, controller, _ = world(claim)
    run(cluster, controller)
    assert cloud.calls == []
    assert condition(cluster, "adopted", LAUNCHED)[0] == "True"


def test_launches_of_a_pass_share_one_create_many_call() -> None:
    cluster, cloud, controller, _ = world(nodeclaim("a"), nodeclaim("b"), nodeclaim("c"))
    run(cluster, controller)
    assert cloud.calls == [["a", "b", "c"]]


@pytest.mark.parametrize(
    ("error", "event", "reason"),
    [
        (
            InsufficientCapacityError("no capacity", [OfferingKey("m5.large", "us-west-2a", "spot")]),
            "InsufficientCapacityError",
            INSUFFICIENT_CAPACITY,
        ),
        (NodeClassNotReadyError("EC2NodeClass 'default' is not Ready"), "NodeClassNotReady", NODECLASS_NOT_READY),
    ],
)
def test_capacity_and_nodeclass_errors_delete_the_nodeclaim_with_an_event(
    error: Exception, event: str, reason: str
) -> None:
    cluster, cloud, controller, _ = world(nodeclaim("a"), nodeclaim("b"))
    cloud.answers["a"] = error  # type: ignore[assignment]
    result = run(cluster, controller)
    assert result.deleted == {reason: ["a"]} and result.launched == ["b"]
    deleted = cluster.nodeclaim("a")
    assert deleted.metadata.deletion_timestamp  # the finalizer holds it for the termination flow
    (recorded,) = cluster.events
    assert (recorded.reason, recorded.type, recorded.regarding.name) == (event, "Warning", "a")
    assert str(error) in recorded.message
    assert "status NodeClaim/a" not in cluster.writes


def test_a_launch_error_keeps_the_nodeclaim_unknown_with_the_reason_and_retries() -> None:
    cluster, cloud, controller, _ = world(nodeclaim("a"))
    cloud.answers["a"] = CreateError("CreateFleet: InvalidParameter: bad", reason="InvalidParameter")
    result = run(cluster, controller)
    assert condition(cluster, "a", LAUNCHED) == ("Unknown", "InvalidParameter")
    assert "InvalidParameter" in result.failed["a"]
    del cloud.answers["a"]
    run(cluster, controller)
    assert condition(cluster, "a", LAUNCHED) == ("True", LAUNCHED)


def test_a_transient_error_changes_nothing_but_the_pass_goes_on() -> None:
    cluster, cloud, controller, _ = world(nodeclaim("a"), nodeclaim("b"))
    cloud.answers["a"] = TransientCloudError("creating a fleet: RequestLimitExceeded")
    result = run(cluster, controller)
    assert "RequestLimitExceeded" in result.failed["a"] and result.launched == ["b"]
    assert condition(cluster, "a", LAUNCHED)[0] == "Unknown"


def test_no_launch_starts_when_time_is_short() -> None:
    cluster, cloud, controller, _ = world(nodeclaim("a"))
    result = controller.reconcile(cluster.nodeclaims(), [], time_left=lambda: 5.0)
    assert result.deferred == 1 and cloud.calls == []


def test_a_nodeclaim_created_without_the_finalizer_gets_it_before_launch() -> None:
    cluster, _cloud, controller, _ = world(nodeclaim("foreign", finalizer=False))
    run(cluster, controller)
    claim = cluster.nodeclaim("foreign")
    assert claim.metadata.finalizers == [wk.FINALIZER_TERMINATION]
    assert cluster.writes[0] == "patch NodeClaim/foreign"
    assert condition(cluster, "foreign", LAUNCHED)[0] == "True"  # the re-read kept the status write valid


def test_a_status_write_conflict_is_reported_and_the_next_pass_converges() -> None:
    cluster, cloud, controller, _ = world(nodeclaim("a"))
    stale = cluster.nodeclaims()
    cluster.patch_metadata(ObjectRef("NodeClaim", "a"), labels={"team": "payments"})  # someone else writes
    result = controller.reconcile(stale, [])
    assert "conflicted" in result.failed["a"]
    run(cluster, controller)  # the retry launches with the same UID: the same instance
    assert condition(cluster, "a", LAUNCHED)[0] == "True" and len(cloud.launched) == 1


def test_labels_lost_after_the_status_write_are_read_back_from_the_cloud() -> None:
    cluster, cloud, controller, _ = world(nodeclaim("a"))
    run(cluster, controller)
    claim = cluster.nodeclaim("a")
    bare = {k: v for k, v in claim.metadata.labels.items() if k == wk.LABEL_NODEPOOL}
    cluster.add(claim.model_copy(update={"metadata": claim.metadata.model_copy(update={"labels": bare})}))
    run(cluster, controller)
    assert cluster.nodeclaim("a").metadata.labels[wk.LABEL_INSTANCE_TYPE] == "m5.large"
    assert cloud.calls == [["a"]]  # read back, not launched again


def test_a_launch_recorded_without_capacity_gets_it_from_the_cloud_and_initializes() -> None:
    cluster, cloud, controller, _ = world(nodeclaim("a"))
    run(cluster, controller)
    claim = cluster.nodeclaim("a")
    bare = claim.status.model_copy(update={"capacity": None, "allocatable": None})
    cluster.add(claim.model_copy(update={"status": bare}))
    run(cluster, controller)
    assert cluster.nodeclaim("a").status.allocatable == ALLOCATABLE and cloud.calls == [["a"]]
    join(cluster, "a", allocatable=ALLOCATABLE)
    run(cluster, controller)
    assert condition(cluster, "a", INITIALIZED)[0] == "True"


# --- registration ------------------------------------------------------------------------------------
def test_registration_syncs_the_node_and_tags_the_instance() -> None:
    claim = nodeclaim(
        "a",
        taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}],
        startupTaints=[{"key": "cni-not-ready", "effect": "NoSchedule"}],
    )
    cluster, cloud, controller, _ = world(claim)
    run(cluster, controller)
    name = join(
        cluster,
        "a",
        taints=[
            {"key": wk.TAINT_UNREGISTERED, "effect": "NoExecute"},
            {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
        ],
    )
    result = run(cluster, controller)
    assert result.registered == ["a"] and result.tagged == 1 and cloud.tags == [("a", name)]
    node_obj = cluster.stored("Node", name)
    labels = node_obj["metadata"]["labels"]
    assert labels[wk.LABEL_REGISTERED] == "true" and labels[wk.LABEL_NODEPOOL] == "default"
    assert labels[wk.LABEL_INSTANCE_TYPE] == "m5.large"
    assert node_obj["metadata"]["annotations"][wk.ANNOTATION_NODEPOOL_HASH] == "123"
    assert node_obj["metadata"]["finalizers"] == [wk.FINALIZER_TERMINATION]
    (owner,) = node_obj["metadata"]["ownerReferences"]
    assert owner == {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "name": "a",
        "uid": "uid-a",
        "blockOwnerDeletion": True,
    }
    assert node_obj["spec"]["taints"] == [
        {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
        {"key": "cni-not-ready", "effect": "NoSchedule"},
    ]
    stored = cluster.nodeclaim("a")
    assert stored.status.node_name == name and condition(cluster, "a", REGISTERED) == ("True", REGISTERED)
    assert stored.metadata.annotations[wk.ANNOTATION_INSTANCE_TAGGED] == "true"
    assert not cluster.events


def test_a_node_the_cluster_refuses_to_patch_fails_its_claim_only() -> None:
    cluster, _, controller, _ = world(nodeclaim("a"), nodeclaim("b"))
    run(cluster, controller)
    refused, accepted = join(cluster, "a"), join(cluster, "b")
    patch_metadata = cluster.patch_metadata

    def forbidding(ref: ObjectRef, **changes: object) -> None:
        if ref.name == refused:
            raise ForbiddenError(f'nodes "{refused}" is forbidden: User "fn" cannot patch resource "nodes"')
        patch_metadata(ref, **changes)  # type: ignore[arg-type]

    cluster.patch_metadata = forbidding  # type: ignore[method-assign]
    result = run(cluster, controller)
    assert result.registered == ["b"]
    assert "forbidden" in result.failed["a"]
    assert condition(cluster, "b", REGISTERED)[0] == "True"
    assert condition(cluster, "a", REGISTERED)[0] != "True"
    assert accepted in {n["metadata"]["name"] for n in cluster.nodes()}


def test_a_node_without_the_unregistered_taint_registers_with_a_warning() -> None:
    cluster, _cloud, controller, _ = world(nodeclaim("a"))
    run(cluster, controller)
    join(cluster, "a", taints=[])
    run(cluster, controller)
    (event,) = cluster.events
    assert event.reason == "UnregisteredTaintMissing" and condition(cluster, "a", REGISTERED)[0] == "True"


def test_two_nodes_with_one_provider_id_fail_registration() -> None:
    cluster, _cloud, controller, _ = world(nodeclaim("a"))
    run(cluster, controller)
    provider_id = cluster.nodeclaim("a").status.provider_id
    cluster.add(node("n1", provider_id))
    cluster.add(node("n2", provider_id))
    run(cluster, controller)
    assert condition(cluster, "a", REGISTERED) == ("False", "MultipleNodesFound")


def test_a_failed_tag_is_counted_and_retried_by_the_next_pass() -> None:
    cluster, cloud, controller, _ = world(nodeclaim("a"))
    run(cluster, controller)
    join(cluster, "a")
    cloud.tag_error = TransientCloudError("tagging: throttled")
    refused = run(cluster, controller)
    assert condition(cluster, "a", REGISTERED)[0] == "True" and not cloud.tags
    assert refused.untagged == ["a"] and refused.tagged == 0
    assert total(refused.points, m.INSTANCE_TAGGING_FAILURES, nodepool="default") == 1
    cloud.tag_error = None
    tagged = run(cluster, controller)
    assert len(cloud.tags) == 1 and tagged.tagged == 1 and not tagged.untagged
    assert total(tagged.points, m.INSTANCE_TAGGING_FAILURES) == 0


# --- initialization ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("node_options", "reason"),
    [
        ({"ready": False}, "NodeNotReady"),
        ({"taints": [{"key": "cni-not-ready", "effect": "NoSchedule"}]}, "StartupTaintsExist"),
        ({"taints": [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]}, "KnownEphemeralTaintsExist"),
        ({"taints": []}, "ResourceNotRegistered"),
    ],
)
def test_initialization_waits_for_what_is_missing(node_options: dict[str, object], reason: str) -> None:
    claim = nodeclaim(
        "a",
        startupTaints=[{"key": "cni-not-ready", "effect": "NoSchedule"}],
        resources={"requests": {"cpu": "1", "nvidia.com/gpu": "1"}},
    )
    cluster, _cloud, controller, _ = world(claim)
    run(cluster, controller)
    join(cluster, "a", **node_options)
    run(cluster, controller)  # registers: the startup taint is put on (or kept on) the node
    if reason == "KnownEphemeralTaintsExist":  # the kubelet adds its own taint after registration
        name = "ip-a"
        cluster.set_node_taints(name, [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}])
    elif reason != "StartupTaintsExist":
        cluster.set_node_taints("ip-a", [])
    run(cluster, controller)
    assert condition(cluster, "a", INITIALIZED) == ("Unknown", reason)
    assert condition(cluster, "a", READY)[0] != "True"


def test_an_initialized_nodeclaim_is_ready_and_its_node_labelled() -> None:
    cluster, _cloud, controller, _ = world(
        nodeclaim("a", startupTaints=[{"key": "cni-not-ready", "effect": "NoSchedule"}])
    )
    run(cluster, controller)
    name = join(cluster, "a")
    run(cluster, controller)
    cluster.set_node_taints(name, [])  # the CNI is up
    result = run(cluster, controller)
    assert result.initialized == ["a"]
    assert cluster.stored("Node", name)["metadata"]["labels"][wk.LABEL_INITIALIZED] == "true"
    assert condition(cluster, "a", INITIALIZED)[0] == "True" and condition(cluster, "a", READY)[0] == "True"
    writes = list(cluster.writes)
    assert run(cluster, controller).examined == 0 and cluster.writes == writes


# --- liveness ----------------------------------------------------------------------------------------
def test_a_nodeclaim_not_registered_15_minutes_after_launch_is_deleted_with_an_event() -> None:
    cluster, _cloud, controller, clock = world(nodeclaim("a"))
    run(cluster, controller)
    clock.now = NOW + timedelta(minutes=14, seconds=59)
    assert run(cluster, controller).deleted == {}
    clock.now = NOW + timedelta(minutes=15)
    assert run(cluster, controller).deleted == {LIVENESS: ["a"]}
    assert cluster.nodeclaim("a").metadata.deletion_timestamp
    assert [e.reason for e in cluster.events] == ["RegistrationTimeout"]


def test_a_registered_nodeclaim_is_never_deleted_for_liveness() -> None:
    cluster, _cloud, controller, clock = world(nodeclaim("a"))
    run(cluster, controller)
    join(cluster, "a", ready=False)
    run(cluster, controller)
    clock.now = NOW + timedelta(hours=1)
    assert run(cluster, controller).deleted == {}


def test_nodeclaims_being_deleted_are_left_to_termination() -> None:
    claim = nodeclaim("a")
    claim = claim.model_copy(
        update={"metadata": claim.metadata.model_copy(update={"deletion_timestamp": "2026-11-30T11:00:00Z"})}
    )
    cluster, cloud, controller, _ = world(claim)
    assert run(cluster, controller).examined == 0 and cloud.calls == [] and cluster.writes == []


def test_metrics_carry_karpenters_names_and_dimensions() -> None:
    cluster, cloud, controller, _ = world(nodeclaim("a"), nodeclaim("b"))
    cloud.answers["b"] = InsufficientCapacityError("no capacity")
    first = run(cluster, controller)
    join(cluster, "a")
    second = run(cluster, controller)
    points = {(p.name, p.dimensions): p.value for p in [*first.points, *second.points]}
    pool = (("nodepool", "default"),)
    assert points[(m.NODECLAIMS_LAUNCHED, pool)] == 1
    assert points[(m.NODECLAIMS_REGISTERED, pool)] == 1 and points[(m.NODES_CREATED, pool)] == 1
    assert points[(m.NODECLAIMS_INITIALIZED, pool)] == 1
    disrupted = (("capacity_type", ""), ("nodepool", "default"), ("reason", INSUFFICIENT_CAPACITY))
    assert points[(m.NODECLAIMS_DISRUPTED, disrupted)] == 1
