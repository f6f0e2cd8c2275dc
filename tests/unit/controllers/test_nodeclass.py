"""The nodeclass controller's decisions, against an in-memory Kubernetes and a scripted cloud."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest

from autoscaler.apis.conversion import UBUNTU_INCOMPATIBLE_MESSAGE, UBUNTU_INCOMPATIBLE_REASON, convert
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.conditions import get_condition
from autoscaler.apis.v1.ec2nodeclass import (
    AMIRequirement,
    AMIStatus,
    CapacityReservationStatus,
    EC2NodeClass,
    SecurityGroupStatus,
    SubnetStatus,
)
from autoscaler.apis.v1.hashing import NODECLASS_HASH_VERSION, nodeclass_hash
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.cloudprovider.errors import TransientCloudError
from autoscaler.cloudprovider.nodeclass import NothingMatchedError, ResolutionRefusedError
from autoscaler.controllers.nodeclass import (
    AMIS_READY,
    CAPACITY_RESERVATIONS_READY,
    FAILED,
    FINALIZED,
    INSTANCE_PROFILE_READY,
    RECONCILED,
    SECURITY_GROUPS_READY,
    SUBNETS_READY,
    WAITING,
    NodeClassController,
)
from tests.support.memory_cluster import MemoryCluster

SUBNETS = [SubnetStatus(id="subnet-a", zone="us-west-2a", zone_id="usw2-az1")]
GROUPS = [SecurityGroupStatus(id="sg-1", name="nodes")]
AMIS = [
    AMIStatus(
        id="ami-1", name="al2023", requirements=[AMIRequirement(key=wk.LABEL_ARCH, operator="In", values=["amd64"])]
    )
]


@dataclass
class ScriptedCloud:
    """Answers each resolution from a script; an exception in the script is raised."""

    subnets_answer: object = field(default_factory=lambda: SUBNETS)
    groups_answer: object = field(default_factory=lambda: GROUPS)
    amis_answer: object = field(default_factory=lambda: AMIS)
    profile_answer: object = "cluster_123"
    placement_answer: object = None
    reservations_answer: object = field(default_factory=list)
    cleaned: list[str] = field(default_factory=list)

    @staticmethod
    def _answer(value: object) -> object:
        if isinstance(value, Exception):
            raise value
        return value

    def subnets(self, nodeclass: EC2NodeClass) -> object:
        return self._answer(self.subnets_answer)

    def security_groups(self, nodeclass: EC2NodeClass) -> object:
        return self._answer(self.groups_answer)

    def amis(self, nodeclass: EC2NodeClass) -> object:
        return self._answer(self.amis_answer)

    def instance_profile(self, nodeclass: EC2NodeClass) -> object:
        return self._answer(self.profile_answer)

    def placement_group(self, nodeclass: EC2NodeClass) -> object:
        return self._answer(self.placement_answer)

    def capacity_reservations(self, nodeclass: EC2NodeClass) -> object:
        return self._answer(self.reservations_answer)

    def cleanup(self, nodeclass: EC2NodeClass) -> None:
        self.cleaned.append(nodeclass.name)


def nodeclass(name: str = "default", **metadata: object) -> EC2NodeClass:
    return EC2NodeClass.model_validate(
        {
            "metadata": {"name": name, "generation": 3, **metadata},
            "spec": {
                "role": "NodeRole",
                "amiSelectorTerms": [{"alias": "al2023@latest"}],
                "subnetSelectorTerms": [{"tags": {"discovery": "x"}}],
                "securityGroupSelectorTerms": [{"tags": {"discovery": "x"}}],
            },
        }
    )


def nodeclaim(name: str, nodeclass_name: str = "default", annotations: dict[str, str] | None = None) -> NodeClaim:
    return NodeClaim.model_validate(
        {
            "metadata": {"name": name, "annotations": annotations or {}},
            "spec": {
                "requirements": [],
                "nodeClassRef": {"group": wk.AWS_GROUP, "kind": "EC2NodeClass", "name": nodeclass_name},
            },
        }
    )


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def test_a_resolvable_class_gets_status_conditions_finalizer_and_hash() -> None:
    cluster, cloud = MemoryCluster(nodeclass()), ScriptedCloud()
    outcome = NodeClassController(cluster, cloud, Clock()).reconcile_all()[0]
    stored = cluster.nodeclass("default")
    assert outcome.action == RECONCILED and outcome.ready == "True"
    assert stored.status.subnets == SUBNETS and stored.status.security_groups == GROUPS
    assert stored.status.amis == AMIS and stored.status.instance_profile == "cluster_123"
    for condition in (SUBNETS_READY, SECURITY_GROUPS_READY, AMIS_READY, INSTANCE_PROFILE_READY, "Ready"):
        found = get_condition(stored.status.conditions, condition)
        assert found is not None and found.status == "True" and found.observed_generation == 3
    assert stored.metadata.finalizers == [wk.FINALIZER_NODECLASS_TERMINATION]
    assert stored.metadata.annotations == {
        wk.ANNOTATION_NODECLASS_HASH: nodeclass_hash(nodeclass()),
        wk.ANNOTATION_NODECLASS_HASH_VERSION: NODECLASS_HASH_VERSION,
    }


def test_nothing_matched_sets_the_condition_false_with_an_actionable_message_and_clears_the_field() -> None:
    cloud = ScriptedCloud(
        subnets_answer=NothingMatchedError('no subnet matched subnetSelectorTerms [{"tags": {"discovery": "x"}}]')
    )
    cluster = MemoryCluster(nodeclass())
    NodeClassController(cluster, cloud, Clock()).reconcile_all()
    status = cluster.nodeclass("default").status
    subnets = get_condition(status.conditions, SUBNETS_READY)
    ready = get_condition(status.conditions, "Ready")
    assert subnets is not None and subnets.status == "False" and subnets.reason == "SubnetsNotFound"
    assert "no subnet matched" in (subnets.message or "")
    assert status.subnets is None
    assert ready is not None and ready.status == "False" and ready.reason == "SubnetsReadyNotReady"
    assert "no subnet matched" in (ready.message or "")


def test_a_transient_error_keeps_what_was_resolved_and_reports_it() -> None:
    cluster, clock = MemoryCluster(nodeclass()), Clock()
    NodeClassController(cluster, ScriptedCloud(), clock).reconcile_all()
    clock.now += timedelta(minutes=5)
    flaky = ScriptedCloud(amis_answer=TransientCloudError("describing images: RequestLimitExceeded"))
    outcome = NodeClassController(cluster, flaky, clock).reconcile_all()[0]
    status = cluster.nodeclass("default").status
    assert status.amis == AMIS
    assert get_condition(status.conditions, AMIS_READY).status == "True"  # type: ignore[union-attr]
    assert "RequestLimitExceeded" in outcome.message


def test_an_unchanged_class_is_not_written_again_and_transition_times_hold() -> None:
    cluster, clock = MemoryCluster(nodeclass()), Clock()
    controller = NodeClassController(cluster, ScriptedCloud(), clock)
    controller.reconcile_all()
    first = cluster.nodeclass("default").status.conditions
    writes = len(cluster.writes)
    clock.now += timedelta(minutes=5)
    controller.reconcile_all()
    assert len(cluster.writes) == writes
    assert cluster.nodeclass("default").status.conditions == first


def test_nodeclaims_stamped_under_another_hash_version_are_restamped() -> None:
    old = nodeclaim("old", annotations={wk.ANNOTATION_NODECLASS_HASH: "1", wk.ANNOTATION_NODECLASS_HASH_VERSION: "v3"})
    current = nodeclaim(
        "current",
        annotations={wk.ANNOTATION_NODECLASS_HASH: "1", wk.ANNOTATION_NODECLASS_HASH_VERSION: NODECLASS_HASH_VERSION},
    )
    other = nodeclaim("other", nodeclass_name="elsewhere")
    cluster = MemoryCluster(nodeclass(), old, current, other)
    NodeClassController(cluster, ScriptedCloud(), Clock()).reconcile_all()
    assert cluster.nodeclaim("old").metadata.annotations[wk.ANNOTATION_NODECLASS_HASH] == nodeclass_hash(nodeclass())
    assert cluster.nodeclaim("current").metadata.annotations[wk.ANNOTATION_NODECLASS_HASH] == "1"  # real drift
    assert not cluster.nodeclaim("other").metadata.annotations


def test_deletion_waits_for_nodeclaims_then_cleans_up_and_releases_the_finalizer() -> None:
    deleting = nodeclass(finalizers=[wk.FINALIZER_NODECLASS_TERMINATION], deletionTimestamp="2026-05-01T11:00:00Z")
    cluster, cloud = MemoryCluster(deleting, nodeclaim("still-here")), ScriptedCloud()
    controller = NodeClassController(cluster, cloud, Clock())
    outcome = controller.reconcile_all()[0]
    assert outcome.action == WAITING and "still-here" in outcome.message
    assert cloud.cleaned == [] and cluster.events and cluster.events[0].reason == "WaitingOnNodeClaimTermination"
    cluster.remove("NodeClaim", "still-here")
    assert controller.reconcile_all()[0].action == FINALIZED
    assert cloud.cleaned == ["default"]
    assert "default" not in cluster.names("EC2NodeClass")  # finalizer gone, the API server removes it


def test_one_failing_class_does_not_stop_the_others() -> None:
    class Exploding(ScriptedCloud):
        def subnets(self, nodeclass: EC2NodeClass) -> object:
            if nodeclass.name == "bad":
                raise RuntimeError("boom")
            return super().subnets(nodeclass)

    cluster = MemoryCluster(nodeclass("bad"), nodeclass("good"))
    outcomes = {o.name: o for o in NodeClassController(cluster, Exploding(), Clock()).reconcile_all()}
    assert outcomes["bad"].action == FAILED and "boom" in outcomes["bad"].message
    assert outcomes["good"].action == RECONCILED and outcomes["good"].ready == "True"


@pytest.mark.parametrize("failing", ["groups_answer", "amis_answer", "profile_answer"])
def test_each_dependent_condition_rolls_up_into_ready(failing: str) -> None:
    cloud = ScriptedCloud(**{failing: NothingMatchedError("nothing here")})
    cluster = MemoryCluster(nodeclass())
    outcome = NodeClassController(cluster, cloud, Clock()).reconcile_all()[0]
    assert outcome.ready == "False"


def converted_ubuntu(**spec: object) -> EC2NodeClass:
    """A v1beta1 ``amiFamily: Ubuntu`` class as the conversion webhook hands it to us."""
    v1beta1 = {
        "apiVersion": "karpenter.k8s.aws/v1beta1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "ubuntu", "generation": 2},
        "spec": {
            "amiFamily": "Ubuntu",
            "role": "NodeRole",
            "subnetSelectorTerms": [{"tags": {"discovery": "x"}}],
            "securityGroupSelectorTerms": [{"tags": {"discovery": "x"}}],
            **spec,
        },
    }
    return EC2NodeClass.model_validate(convert(v1beta1, "karpenter.k8s.aws/v1"))


def test_a_converted_ubuntu_class_on_its_placeholder_says_to_pin_an_ami_without_asking_the_cloud() -> None:
    cluster = MemoryCluster(converted_ubuntu())
    cloud = ScriptedCloud(amis_answer=AssertionError("the placeholder AMI was looked up"))
    outcome = NodeClassController(cluster, cloud, Clock()).reconcile_all()[0]
    stored = cluster.nodeclass("ubuntu")
    assert stored is not None and stored.status is not None
    status = stored.status
    amis, ready = get_condition(status.conditions, AMIS_READY), get_condition(status.conditions, "Ready")
    assert outcome.action == RECONCILED and outcome.ready == "False"
    assert amis is not None and (amis.status, amis.reason) == ("False", UBUNTU_INCOMPATIBLE_REASON)
    assert amis.message == UBUNTU_INCOMPATIBLE_MESSAGE and amis.observed_generation == 2
    assert "ami-placeholder" in UBUNTU_INCOMPATIBLE_MESSAGE and "Ubuntu EKS AMI" in UBUNTU_INCOMPATIBLE_MESSAGE
    assert status.amis is None and status.subnets == SUBNETS  # the rest still resolves
    assert ready is not None and ready.status == "False" and UBUNTU_INCOMPATIBLE_MESSAGE in (ready.message or "")


def test_a_converted_ubuntu_class_resolves_once_its_ami_is_pinned() -> None:
    pinned = converted_ubuntu(amiSelectorTerms=[{"name": "ubuntu-eks/k8s_1.30/*", "owner": "099720109477"}])
    cluster = MemoryCluster(pinned)
    outcome = NodeClassController(cluster, ScriptedCloud(), Clock()).reconcile_all()[0]
    stored = cluster.nodeclass("ubuntu")
    assert outcome.ready == "True" and stored is not None and stored.status is not None and stored.status.amis == AMIS


RESERVATION = CapacityReservationStatus.model_validate(
    {
        "availabilityZone": "us-west-2a",
        "id": "cr-0123",
        "instanceMatchCriteria": "targeted",
        "instanceType": "m5.large",
        "ownerID": "123456789012",
    }
)


def test_reservations_fill_the_status_and_their_condition_is_a_dependent_of_ready() -> None:
    cluster = MemoryCluster(nodeclass())
    NodeClassController(cluster, ScriptedCloud(reservations_answer=[RESERVATION]), Clock()).reconcile_all()
    status = cluster.nodeclass("default").status
    assert status.capacity_reservations == [RESERVATION]
    found = get_condition(status.conditions, CAPACITY_RESERVATIONS_READY)
    assert found is not None and found.status == "True"

    refused = ScriptedCloud(reservations_answer=ResolutionRefusedError("EC2 refused: UnauthorizedOperation"))
    outcome = NodeClassController(cluster, refused, Clock()).reconcile_all()[0]
    status = cluster.nodeclass("default").status
    condition = get_condition(status.conditions, CAPACITY_RESERVATIONS_READY)
    assert (
        condition is not None and condition.status == "False" and "UnauthorizedOperation" in (condition.message or "")
    )
    assert outcome.ready == "False" and status.capacity_reservations is None


def test_no_reservation_matching_is_ready_with_an_empty_status() -> None:
    cluster = MemoryCluster(nodeclass())
    outcome = NodeClassController(cluster, ScriptedCloud(reservations_answer=[]), Clock()).reconcile_all()[0]
    status = cluster.nodeclass("default").status
    assert outcome.ready == "True" and status.capacity_reservations is None
    found = get_condition(status.conditions, CAPACITY_RESERVATIONS_READY)
    assert found is not None and found.status == "True"


def test_with_the_gate_off_reservations_are_not_resolved_nor_part_of_ready() -> None:
    cluster = MemoryCluster(nodeclass())
    cloud = ScriptedCloud(reservations_answer=ResolutionRefusedError("never asked"))
    outcome = NodeClassController(cluster, cloud, Clock(), reserved_capacity=False).reconcile_all()[0]
    status = cluster.nodeclass("default").status
    assert outcome.ready == "True" and status.capacity_reservations is None
    assert get_condition(status.conditions, CAPACITY_RESERVATIONS_READY) is None


def test_nodeclaims_in_an_expiring_capacity_block_are_deleted_others_are_kept() -> None:
    block = RESERVATION.model_copy(update={"id": "cr-0b10c", "reservation_type": "capacity-block", "state": "expiring"})

    def reserved(name: str, rid: str) -> NodeClaim:
        claim = nodeclaim(name)
        claim.metadata.labels = {wk.LABEL_CAPACITY_RESERVATION_ID: rid}
        return claim

    cluster = MemoryCluster(nodeclass(), reserved("in-block", "cr-0b10c"), reserved("in-odcr", "cr-0123"))
    cluster.add(nodeclaim("on-demand"))
    NodeClassController(cluster, ScriptedCloud(reservations_answer=[RESERVATION, block]), Clock()).reconcile_all()
    left = {c.name: bool(c.metadata.deletion_timestamp) for c in cluster.nodeclaims()}
    assert left.get("in-block", True) is True  # deleted, or being deleted behind its finalizer
    assert left["in-odcr"] is False and left["on-demand"] is False
