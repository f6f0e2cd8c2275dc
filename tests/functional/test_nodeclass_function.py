"""The nodeclass function's real handler over moto (EC2, SSM, EKS, IAM) and the Kubernetes API emulator, invoked
with the forwarder's EC2NodeClass events and the schedule: a class becomes Ready, a selector that matches nothing
says so, and a deleted class waits for its NodeClaims before its instance profile and launch templates go."""

from __future__ import annotations

import json
from typing import Any

import pytest

from autoscaler import metrics as m
from autoscaler import runtime
from autoscaler.apis.v1 import labels as wk
from autoscaler.providers.aws.instanceprofiles import instance_profile_name
from autoscaler_dev.harness import Context, load_handler
from autoscaler_dev.kube_emulator.emulator import KubeEmulator
from autoscaler_dev.world.aws_world import KUBERNETES_VERSION, REGION, AWSWorld
from tests.functional.aws.helpers import existing_templates, launch_template, owned_tags
from tests.support.kube import nodeclaim, nodeclass
from tests.support.lambdas import LambdaEnvironment, lambda_environment, sample_event
from tests.support.metrics import emitted

__all__ = ["lambda_environment"]

HANDLER = load_handler("nodeclass")
NODECLASS = ("karpenter.k8s.aws/v1", "EC2NodeClass")


@pytest.fixture
def eks_cluster(aws_world: AWSWorld, lambda_environment: LambdaEnvironment) -> str:
    """The function's EKS cluster in the moto world (its name is the environment's)."""
    role_arn = aws_world.client("iam").get_role(RoleName=aws_world.role)["Role"]["Arn"]
    aws_world.client("eks").create_cluster(
        name=lambda_environment.cluster_name,
        version=KUBERNETES_VERSION,
        roleArn=role_arn,
        resourcesVpcConfig={"subnetIds": list(aws_world.subnets.values())},
    )
    return lambda_environment.cluster_name


def invoke(event: dict[str, Any]) -> dict[str, Any]:
    answer: dict[str, Any] = HANDLER.handler(event, Context("nodeclass"))
    json.dumps(answer)
    return answer


def forwarded(detail_type: str, cluster: str, name: str = "default") -> dict[str, Any]:
    """The forwarder's event for an EC2NodeClass change, as EventBridge delivers it to the function."""
    event = sample_event(f"forwarder/ec2nodeclass-{detail_type.rsplit(maxsplit=1)[-1].lower()}.json")
    event["detail"]["cluster"] = cluster
    event["detail"]["object"]["name"] = name
    return event


def world_class(name: str = "default", **spec: Any) -> dict[str, Any]:
    """An EC2NodeClass selecting the moto world's subnets and security group."""
    body = nodeclass(name, role="KarpenterNodeRole-world")
    discovery = [{"tags": {"karpenter.sh/discovery": "world"}}]
    body["spec"].update({"subnetSelectorTerms": discovery, "securityGroupSelectorTerms": discovery, **spec})
    return body


def conditions(kube: KubeEmulator, name: str = "default") -> dict[str, tuple[str, str]]:
    stored = kube.get(*NODECLASS, name) or {}
    return {c["type"]: (c["status"], c.get("message", "")) for c in stored.get("status", {}).get("conditions", [])}


def test_a_created_class_becomes_ready_with_its_resolved_status(
    aws_world: AWSWorld, kube: KubeEmulator, eks_cluster: str, capsys: Any
) -> None:
    kube.create(world_class())
    clients = aws_world.clients()
    runtime.install(runtime.Runtime.build(clients=clients))  # this container's runtime, over clients we watch
    capsys.readouterr()

    answer = invoke(forwarded("EC2NodeClass Created", eks_cluster))

    assert answer["trigger"] == "EC2NodeClass Created"
    assert answer["outcomes"] == [
        {"name": "default", "action": "Reconciled", "ready": "True", "message": "", "deprecated_amis": ()}
    ]
    stored = kube.get(*NODECLASS, "default")
    assert stored is not None
    status = stored["status"]
    assert {s["id"] for s in status["subnets"]} == set(aws_world.subnets.values())
    assert [g["id"] for g in status["securityGroups"]] == [aws_world.security_group]
    assert aws_world.images["al2023/x86_64/standard"] in {a["id"] for a in status["amis"]}
    assert status["instanceProfile"] == instance_profile_name(eks_cluster, REGION, "default")
    assert all(state == "True" for state, _ in conditions(kube).values())
    assert wk.FINALIZER_NODECLASS_TERMINATION in stored["metadata"]["finalizers"]
    assert stored["metadata"]["annotations"][wk.ANNOTATION_NODECLASS_HASH]
    profile = aws_world.client("iam").get_instance_profile(InstanceProfileName=status["instanceProfile"])
    assert [r["RoleName"] for r in profile["InstanceProfile"]["Roles"]] == [aws_world.role]
    metrics = emitted(capsys.readouterr().out)
    assert metrics[f"{m.NODECLASS_RECONCILES}[action=Reconciled]"] == 1
    assert metrics[m.NODECLASSES_NOT_READY] == 0

    # The sweep, warm: the same container's adapters answer from their caches (subnets, security groups, AMIs,
    # the cluster), so a pass over an unchanged class makes no EC2, SSM or EKS call.
    calls: list[str] = []
    for client in (clients.ec2, clients.ssm, clients.eks):
        client.meta.events.register("before-call", lambda model, **_: calls.append(model.name))
    swept = invoke(sample_event("scheduled-event.json"))
    assert swept["trigger"] == "Scheduled Event" and swept["outcomes"] == answer["outcomes"]
    assert calls == []


def test_a_subnet_selector_that_matches_nothing_says_what_it_looked_for(kube: KubeEmulator, eks_cluster: str) -> None:
    kube.create(world_class(subnetSelectorTerms=[{"tags": {"karpenter.sh/discovery": "no-such-cluster"}}]))

    answer = invoke(sample_event("scheduled-event.json"))

    assert answer["outcomes"][0]["ready"] == "False"
    state, message = conditions(kube)["SubnetsReady"]
    assert state == "False"
    assert message == 'no subnet matched subnetSelectorTerms [{"tags": {"karpenter.sh/discovery": "no-such-cluster"}}]'
    ready, ready_message = conditions(kube)["Ready"]
    assert ready == "False" and "SubnetsReady=False" in ready_message
    stored = kube.get(*NODECLASS, "default") or {}
    assert "subnets" not in stored.get("status", {})


def test_a_deleted_class_waits_for_its_nodeclaims_then_cleans_up_and_lets_go(
    aws_world: AWSWorld, kube: KubeEmulator, eks_cluster: str
) -> None:
    kube.create(world_class())
    invoke(forwarded("EC2NodeClass Created", eks_cluster))
    profile = instance_profile_name(eks_cluster, REGION, "default")
    template = launch_template(aws_world, owned_tags(eks_cluster, "default"))
    other_class_template = launch_template(aws_world, owned_tags(eks_cluster, "other"))
    kube.create(nodeclaim("default-a"))  # refers to the class "default"
    kube.delete(*NODECLASS, "default")  # the finalizer holds it

    waiting = invoke(forwarded("EC2NodeClass Deleting", eks_cluster))

    assert waiting["outcomes"][0]["action"] == "WaitingForNodeClaims"
    assert kube.get(*NODECLASS, "default") is not None
    aws_world.client("iam").get_instance_profile(InstanceProfileName=profile)  # still there
    notes = [
        e["note"] for e in kube.list("events.k8s.io/v1", "Event") if e["reason"] == "WaitingOnNodeClaimTermination"
    ]
    assert notes == ["waiting on 1 NodeClaim(s) to terminate: default-a"]

    kube.delete("karpenter.sh/v1", "NodeClaim", "default-a")
    finalized = invoke(sample_event("scheduled-event.json"))

    assert finalized["outcomes"][0]["action"] == "Finalized"
    assert kube.get(*NODECLASS, "default") is None  # finalizer removed: the API server let it go
    with pytest.raises(aws_world.client("iam").exceptions.NoSuchEntityException):
        aws_world.client("iam").get_instance_profile(InstanceProfileName=profile)
    assert existing_templates(aws_world, template, other_class_template) == {other_class_template}


def test_events_of_another_cluster_or_shape_are_skipped(kube: KubeEmulator, eks_cluster: str) -> None:
    kube.create(world_class())
    assert invoke(forwarded("EC2NodeClass Updated", "some-other-cluster")) == {"skipped": "an event of another cluster"}
    assert invoke({"hello": "world"}) == {"skipped": "neither an EC2NodeClass event nor a scheduled event"}
    assert invoke(sample_event("forwarder/ec2nodeclass-deleted.json")) == {
        "skipped": "neither an EC2NodeClass event nor a scheduled event"
    }
    assert "status" not in (kube.get(*NODECLASS, "default") or {})
