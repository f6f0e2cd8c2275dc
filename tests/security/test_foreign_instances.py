"""Another cluster's instance, named by a NodeClaim's status, against moto and the synthesized roles' IAM.

Whoever may write ``nodeclaims/status`` can point a NodeClaim at any instance id. The roles' ABAC conditions refuse
to terminate or tag an instance without this cluster's tags (``test_role_permissions`` proves it on the policies);
here the functions' real clients, through the world's IAM gate, meet such an instance: the denial is what the roles
answer, termination skips the instance without asking (one foreign id would fail a whole TerminateInstances), and
the NodeClaim is released with the skip counted and logged; tagging it is refused and answered as a typed error.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from botocore.exceptions import ClientError

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.common import Condition
from autoscaler.apis.v1.nodeclaim import LAUNCHED, REGISTERED
from autoscaler.cloudprovider import CloudProviderError, CreateError, ForeignInstanceError
from autoscaler.controllers.lifecycle.registration import Registration, Tagging
from autoscaler.controllers.lifecycle.work import ClaimWork
from autoscaler.controllers.termination import Stage, TerminationController, metric_points
from autoscaler.kube.port import ObjectRef
from autoscaler.metrics import FOREIGN_INSTANCES_SKIPPED
from autoscaler_dev.iam.enforcer import IamEnforcer
from autoscaler_dev.world.aws_world import CLUSTER, AWSWorld
from infra.catalog import FUNCTIONS
from tests.functional.aws.helpers import claim, instance, provider, tags_of, unique
from tests.functional.aws.test_launch import ON_DEMAND
from tests.support.aws_fixtures import aws_world
from tests.support.iam_gates import gated, synthesized
from tests.support.memory_cluster import MemoryCluster
from tests.support.metrics import total
from tests.unit.termination.builders import node, nodeclaim

__all__ = ["aws_world"]

REGISTERED_CONDITIONS = [
    {"type": t, "status": "True", "reason": t, "lastTransitionTime": "2026-03-02T14:05:00Z"}
    for t in (LAUNCHED, REGISTERED)
]

OTHER = "other"
THEIR_TAGS = {
    wk.TAG_CLUSTER_NAME: OTHER,
    f"{wk.TAG_CLUSTER_PREFIX}{OTHER}": "owned",
    wk.TAG_NODEPOOL: "default",
    wk.TAG_NODECLASS: "default",
}
OUR_TAGS = {
    wk.TAG_CLUSTER_NAME: CLUSTER,
    f"{wk.TAG_CLUSTER_PREFIX}{CLUSTER}": "owned",
    wk.TAG_NODEPOOL: "default",
    wk.TAG_NODECLASS: "default",
}


@pytest.fixture(scope="module")
def stack() -> dict[str, Any]:
    return synthesized()


def run(world: AWSWorld, tags: dict[str, str]) -> str:
    """A running instance with ``tags``, started by the world (not by a function)."""
    image, subnet = next(iter(world.images.values())), next(iter(world.subnets.values()))
    spec = [{"ResourceType": "instance", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}]
    started = world.client("ec2").run_instances(
        ImageId=image, InstanceType="m5.large", MinCount=1, MaxCount=1, SubnetId=subnet, TagSpecifications=spec
    )
    return str(started["Instances"][0]["InstanceId"])


def provider_id(world: AWSWorld, iid: str) -> str:
    return f"aws:///{instance(world, iid)['Placement']['AvailabilityZone']}/{iid}"


def state(world: AWSWorld, iid: str) -> str:
    return str(instance(world, iid)["State"]["Name"])


def denied(iam: IamEnforcer, action: str) -> list[str]:
    return [d.action for d in iam.denials if d.action == action]


@pytest.fixture
def theirs(aws_world: AWSWorld) -> Iterator[str]:
    iid = run(aws_world, THEIR_TAGS)
    yield iid
    aws_world.client("ec2").terminate_instances(InstanceIds=[iid])


@pytest.mark.parametrize("function", [f for f in FUNCTIONS if f != "conversion"])
def test_no_role_may_terminate_another_clusters_instance(
    aws_world: AWSWorld, stack: dict[str, Any], theirs: str, function: str
) -> None:
    clients, iam = gated(aws_world, stack, function)
    with pytest.raises(ClientError) as refused:
        clients.ec2.terminate_instances(InstanceIds=[theirs])
    assert refused.value.response["Error"]["Code"] == "UnauthorizedOperation"
    assert denied(iam, "ec2:TerminateInstances") == ["ec2:TerminateInstances"]
    assert state(aws_world, theirs) == "running"


def test_deleting_a_nodeclaim_that_names_another_clusters_instance_leaves_it_alone(
    aws_world: AWSWorld, stack: dict[str, Any], theirs: str
) -> None:
    """In a batch with one of ours, the foreign instance is skipped before the call (so ours still goes), answered
    as ForeignInstanceError, and no call was denied."""
    ours = run(aws_world, OUR_TAGS)
    clients, iam = gated(aws_world, stack, "termination")
    cloud = provider(aws_world, clients=clients)
    claims = [
        nodeclaim("points-at-theirs", provider_id(aws_world, theirs)),
        nodeclaim("points-at-ours", provider_id(aws_world, ours)),
    ]
    answers = cloud.delete_many(claims)
    assert isinstance(answers[0], ForeignInstanceError) and answers[1] is None
    assert state(aws_world, theirs) == "running"
    assert state(aws_world, ours) in ("shutting-down", "terminated")
    assert iam.denials == []


def test_termination_releases_such_a_nodeclaim_with_a_counted_logged_skip(
    aws_world: AWSWorld, stack: dict[str, Any], theirs: str, caplog: pytest.LogCaptureFixture
) -> None:
    clients, iam = gated(aws_world, stack, "termination")
    pointed = provider_id(aws_world, theirs)
    cluster = MemoryCluster(nodeclaim("hijacked", pointed, node_name=None))
    cluster.delete(ObjectRef("NodeClaim", "hijacked"))
    controller = TerminationController(cluster, provider(aws_world, clients=clients))
    with caplog.at_level(logging.WARNING):
        result = controller.sweep()
    progress = result.of("hijacked")
    assert progress is not None and progress.stage is Stage.FINISHED, result.as_dict()
    assert cluster.stored("NodeClaim", "hijacked") is None  # released: for this cluster it has no instance
    assert total(metric_points(result), FOREIGN_INSTANCES_SKIPPED, nodepool="default") == 1
    assert any(theirs in r.getMessage() and "does not own" in r.getMessage() for r in caplog.records)
    assert state(aws_world, theirs) == "running" and iam.denials == []


def test_tagging_another_clusters_instance_at_registration_is_denied_and_answered(
    aws_world: AWSWorld, stack: dict[str, Any], theirs: str
) -> None:
    """The provisioner's registration step tags the instance a NodeClaim names: IAM refuses it for a foreign one,
    and the provider answers a CloudProviderError (the lifecycle logs it and retries), never a raw ClientError."""
    clients, iam = gated(aws_world, stack, "provisioner")
    cloud = provider(aws_world, clients=clients)
    hijacked = nodeclaim("hijacked", provider_id(aws_world, theirs))
    with pytest.raises(CloudProviderError, match="UnauthorizedOperation"):
        cloud.tag_registered(hijacked, "node-x")
    assert denied(iam, "ec2:CreateTags") == ["ec2:CreateTags"]
    assert tags_of(instance(aws_world, theirs)) == THEIR_TAGS
    # The lifecycle's registration step meets the same refusal: counted, and left for the next pass.
    registered = hijacked.model_copy(deep=True)
    registered.status.conditions = [Condition.model_validate(c) for c in REGISTERED_CONDITIONS]  # type: ignore[union-attr]
    work = ClaimWork(registered, datetime.now(UTC))
    assert Registration(MemoryCluster(), cloud).tag(work) is Tagging.FAILED
    assert denied(iam, "ec2:CreateTags") == ["ec2:CreateTags"] * 2


def test_the_node_of_such_a_nodeclaim_is_released_too(aws_world: AWSWorld, stack: dict[str, Any], theirs: str) -> None:
    """A Node and NodeClaim pair pointing at a foreign instance drain and finish without terminating it."""
    clients, _ = gated(aws_world, stack, "termination")
    pointed = provider_id(aws_world, theirs)
    cluster = MemoryCluster(nodeclaim("hijacked", pointed, node_name="node-x"), node("node-x", pointed))
    cluster.delete(ObjectRef("NodeClaim", "hijacked"))
    controller = TerminationController(cluster, provider(aws_world, clients=clients))
    for _ in range(3):
        result = controller.sweep()
    assert cluster.stored("NodeClaim", "hijacked") is None, result.as_dict()
    assert state(aws_world, theirs) == "running"


def test_a_class_tag_that_is_an_ownership_key_in_another_case_fails_the_launch(aws_world: AWSWorld) -> None:
    """Karpenter's CEL accepts ``EKS:eks-cluster-name`` (EC2's keys are case-sensitive), but IAM reads condition keys
    case-insensitively: such a tag would put the user's value where the ABAC conditions look for ours. The launch
    fails with Karpenter's TagValidationFailed, before any call."""
    nodeclass = aws_world.nodeclass(unique("case-tag"), tags={"EKS:eks-cluster-name": OTHER})
    cloud = provider(aws_world, nodeclass)
    with pytest.raises(CreateError, match="restricted tag keys") as refused:
        cloud.create(claim(unique("cased"), nodeclass.name, ON_DEMAND))
    assert refused.value.reason == "TagValidationFailed"
