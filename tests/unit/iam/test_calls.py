"""What one AWS call asks of IAM (``autoscaler_dev.iam.calls``): its resources, tags, and implied actions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from autoscaler_dev.iam.calls import LaunchTemplateFacts, NotModelled, ProfileFacts, requests_of
from autoscaler_dev.iam.policy import Environment, Request

ENV = Environment(account="123456789012", region="us-west-2")
NODE_ROLE = "arn:aws:iam::123456789012:role/KarpenterNodeRole-world"
OWNED = {"kubernetes.io/cluster/world": "owned", "karpenter.sh/nodepool": "default"}
LAUNCH_TAGS = {**OWNED, "eks:eks-cluster-name": "world"}


class Inventory:
    """The account as a test sets it: tags by resource id, one launch template, one instance profile."""

    def __init__(self, tags: Mapping[str, Mapping[str, str]] | None = None) -> None:
        self.tags = dict(tags or {})
        self.template = LaunchTemplateFacts(
            "lt-0abc",
            OWNED,
            {
                "ImageId": "ami-0123",
                "SecurityGroupIds": ["sg-0abc"],
                "IamInstanceProfile": {"Name": "world_profile"},
                "TagSpecifications": [{"ResourceType": "network-interface", "Tags": _tag_list(LAUNCH_TAGS)}],
            },
        )
        self.profile = ProfileFacts("arn:aws:iam::123456789012:instance-profile/world_profile", OWNED, (NODE_ROLE,))

    def ec2_tags(self, resource_id: str) -> Mapping[str, str]:
        return self.tags.get(resource_id, {})

    def launch_template(self, spec: Mapping[str, Any]) -> LaunchTemplateFacts | None:
        return self.template if spec.get("LaunchTemplateName") == "karpenter-world" else None

    def instance_profile(self, name: str) -> ProfileFacts | None:
        return self.profile if name == "world_profile" else None


def _tag_list(tags: Mapping[str, str]) -> list[dict[str, str]]:
    return [{"Key": k, "Value": v} for k, v in tags.items()]


def fleet(capacity_type: str = "on-demand") -> dict[str, Any]:
    return {
        "Type": "instant",
        "TargetCapacitySpecification": {"TotalTargetCapacity": 1, "DefaultTargetCapacityType": capacity_type},
        "LaunchTemplateConfigs": [
            {
                "LaunchTemplateSpecification": {"LaunchTemplateName": "karpenter-world", "Version": "$Latest"},
                "Overrides": [{"InstanceType": "m5.large", "SubnetId": "subnet-0a"}, {"SubnetId": "subnet-0b"}],
            }
        ],
        "TagSpecifications": [
            {"ResourceType": kind, "Tags": _tag_list(LAUNCH_TAGS)} for kind in ("instance", "volume", "fleet")
        ],
    }


def by_action(requests: list[Request]) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for request in requests:
        found.setdefault(request.action, set()).add(request.resource.split(":", 5)[5].split("/")[0])
    return found


def test_create_fleet_is_run_instances_on_everything_it_creates_and_uses() -> None:
    requests = requests_of("ec2", "CreateFleet", fleet(), ENV, Inventory())
    kinds = by_action(requests)
    created = {"instance", "volume", "network-interface"}
    used = {"launch-template", "security-group", "image", "subnet"}
    assert kinds["ec2:RunInstances"] == created | used
    assert kinds["ec2:CreateFleet"] == created | used | {"fleet"}
    assert kinds["iam:PassRole"] == {"role"}
    subnets = {r.resource for r in requests if r.action == "ec2:RunInstances" and ":subnet/" in r.resource}
    assert subnets == {
        "arn:aws:ec2:us-west-2:123456789012:subnet/subnet-0a",
        "arn:aws:ec2:us-west-2:123456789012:subnet/subnet-0b",
    }
    image = next(r.resource for r in requests if ":image/" in r.resource)
    assert image == "arn:aws:ec2:us-west-2::image/ami-0123"  # Amazon's AMIs carry no account


def test_spot_fleets_also_create_spot_requests() -> None:
    kinds = by_action(requests_of("ec2", "CreateFleet", fleet("spot"), ENV, Inventory()))
    assert "spot-instances-request" in kinds["ec2:RunInstances"]


def test_tags_on_create_carry_their_request_tags_and_create_action() -> None:
    requests = requests_of("ec2", "CreateFleet", fleet(), ENV, Inventory())
    tagging = {r.resource.rsplit(":", 1)[1].split("/")[0]: r.context for r in requests if r.action == "ec2:CreateTags"}
    assert tagging["fleet"]["ec2:CreateAction"] == "CreateFleet"
    assert tagging["instance"]["ec2:CreateAction"] == "RunInstances"
    # the network interface's tags come from the launch template, the instance's from the fleet request
    for kind in ("network-interface", "instance", "volume"):
        assert tagging[kind]["aws:RequestTag/eks:eks-cluster-name"] == "world"
        assert set(tagging[kind]["aws:TagKeys"]) == set(LAUNCH_TAGS)


def test_inputs_carry_no_request_tags_and_the_template_its_own_tags() -> None:
    requests = requests_of("ec2", "CreateFleet", fleet(), ENV, Inventory())
    run = {r.resource: r.context for r in requests if r.action == "ec2:RunInstances"}
    template = run["arn:aws:ec2:us-west-2:123456789012:launch-template/lt-0abc"]
    assert template["aws:ResourceTag/kubernetes.io/cluster/world"] == "owned"
    assert template["ec2:ResourceTag/karpenter.sh/nodepool"] == "default"
    subnet = run["arn:aws:ec2:us-west-2:123456789012:subnet/subnet-0a"]
    assert not any(key.startswith("aws:RequestTag/") for key in subnet)


def test_pass_role_names_the_profile_role_passed_to_ec2() -> None:
    requests = requests_of("ec2", "CreateFleet", fleet(), ENV, Inventory())
    passing = [r for r in requests if r.action == "iam:PassRole"]
    assert [(r.resource, r.context["iam:PassedToService"]) for r in passing] == [(NODE_ROLE, "ec2.amazonaws.com")]


def test_create_tags_on_an_existing_instance_has_its_resource_and_request_tags() -> None:
    inventory = Inventory({"i-0abc": LAUNCH_TAGS})
    params = {"Resources": ["i-0abc"], "Tags": [{"Key": "karpenter.sh/nodeclaim", "Value": "default-x"}]}
    (request,) = requests_of("ec2", "CreateTags", params, ENV, inventory)
    assert request.resource == "arn:aws:ec2:us-west-2:123456789012:instance/i-0abc"
    assert request.context["aws:ResourceTag/kubernetes.io/cluster/world"] == "owned"
    assert request.context["aws:RequestTag/karpenter.sh/nodeclaim"] == "default-x"
    assert request.context["aws:TagKeys"] == ["karpenter.sh/nodeclaim"]
    assert "ec2:CreateAction" not in request.context  # not a tag on create


def test_create_launch_template_tags_are_create_tags_of_create_launch_template() -> None:
    params = {
        "LaunchTemplateName": "x",
        "TagSpecifications": [{"ResourceType": "launch-template", "Tags": _tag_list(OWNED)}],
    }
    requests = requests_of("ec2", "CreateLaunchTemplate", params, ENV, Inventory())
    assert [r.action for r in requests] == ["ec2:CreateLaunchTemplate", "ec2:CreateTags"]
    assert requests[1].context["ec2:CreateAction"] == "CreateLaunchTemplate"


def test_adding_a_role_to_a_profile_passes_it() -> None:
    params = {"InstanceProfileName": "world_profile", "RoleName": "KarpenterNodeRole-world"}
    add, passing = requests_of("iam", "AddRoleToInstanceProfile", params, ENV, Inventory())
    assert add.context["aws:ResourceTag/kubernetes.io/cluster/world"] == "owned"
    assert (passing.action, passing.resource, passing.context["iam:PassedToService"]) == (
        "iam:PassRole",
        NODE_ROLE,
        "ec2.amazonaws.com",
    )


def test_batch_and_plural_calls_name_each_resource() -> None:
    names = {"Names": ["/aws/service/eks/a", "/prod/secret"]}
    arns = [r.resource for r in requests_of("ssm", "GetParameters", names, ENV, Inventory())]
    assert arns == [
        "arn:aws:ssm:us-west-2::parameter/aws/service/eks/a",
        "arn:aws:ssm:us-west-2:123456789012:parameter/prod/secret",
    ]
    batch = {"QueueUrl": "http://localhost/123456789012/q", "Entries": []}
    (request,) = requests_of("sqs", "DeleteMessageBatch", batch, ENV, Inventory())
    assert (request.action, request.resource) == ("sqs:DeleteMessage", "arn:aws:sqs:us-west-2:123456789012:q")


def test_what_is_not_modelled_raises_rather_than_allows() -> None:
    with pytest.raises(NotModelled, match="ec2:ModifyInstanceAttribute"):
        requests_of("ec2", "ModifyInstanceAttribute", {}, ENV, Inventory())
    with pytest.raises(NotModelled, match="unknown type"):
        requests_of("ec2", "CreateTags", {"Resources": ["xyz-1"], "Tags": []}, ENV, Inventory())
    assert requests_of("sts", "GetCallerIdentity", {}, ENV, Inventory()) == []  # needs no permission
