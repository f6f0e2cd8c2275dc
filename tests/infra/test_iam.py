"""Least privilege, checked on the synthesized policies: each role's exact actions, every tag condition that
confines a function to its own cluster, role tags for Pod Identity ABAC (no mutating action on `*`:
test_iam_wildcards.py)."""

from __future__ import annotations

import pytest

from infra.catalog import FUNCTIONS
from tests.infra.conftest import Synthesized
from tests.infra.policies import actions, by_sid, mutating_on_wildcards_without_tags, render, resources

BOILERPLATE = {"logs:CreateLogStream", "logs:PutLogEvents", "xray:PutTraceSegments", "xray:PutTelemetryRecords"}
TABLE = {
    "dynamodb:GetItem",
    "dynamodb:BatchGetItem",
    "dynamodb:Query",
    "dynamodb:Scan",
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
    "dynamodb:DeleteItem",
    "dynamodb:ConditionCheckItem",
}
CONSUME = {
    "sqs:ReceiveMessage",
    "sqs:ChangeMessageVisibility",
    "sqs:GetQueueUrl",
    "sqs:DeleteMessage",
    "sqs:GetQueueAttributes",
}
INSTANCE_TYPE_READS = {
    "ec2:DescribeAvailabilityZones",
    "ec2:DescribeCapacityReservations",
    "ec2:DescribeImages",
    "ec2:DescribeInstances",
    "ec2:DescribeInstanceTypeOfferings",
    "ec2:DescribeInstanceTypes",
    "ec2:DescribeLaunchTemplates",
    "ec2:DescribePlacementGroups",
    "ec2:DescribeSecurityGroups",
    "ec2:DescribeSpotPriceHistory",
    "ec2:DescribeSubnets",
}
EXPECTED_ACTIONS = {
    "provisioner": {
        "eks:DescribeCluster",
        *INSTANCE_TYPE_READS,
        "ssm:GetParameter",
        "ssm:GetParameters",
        "pricing:GetProducts",
        "ec2:RunInstances",
        "ec2:CreateFleet",
        "ec2:CreateLaunchTemplate",
        "ec2:CreateTags",
        "iam:PassRole",
        "iam:GetInstanceProfile",
        "iam:ListInstanceProfiles",
        "arc-zonal-shift:GetManagedResource",
        *CONSUME,
        *TABLE,
    },
    "interruption": {"eks:DescribeCluster", *CONSUME, "sqs:SendMessage", *TABLE},
    "disruption": {
        "eks:DescribeCluster",
        *INSTANCE_TYPE_READS,
        "ssm:GetParameter",
        "ssm:GetParameters",
        "pricing:GetProducts",
        "arc-zonal-shift:GetManagedResource",
        *TABLE,
    },
    "termination": {"eks:DescribeCluster", "ec2:DescribeInstances", "ec2:TerminateInstances", *TABLE},
    "garbage_collection": {
        "eks:DescribeCluster",
        "ec2:DescribeInstances",
        "ec2:DescribeLaunchTemplates",
        "ec2:DescribeLaunchTemplateVersions",
        "ec2:TerminateInstances",
        "ec2:DeleteLaunchTemplate",
        "iam:GetInstanceProfile",
        "iam:ListInstanceProfiles",
        "iam:RemoveRoleFromInstanceProfile",
        "iam:DeleteInstanceProfile",
        *TABLE,
    },
    "nodeclass": {
        "eks:DescribeCluster",
        "ec2:DescribeAvailabilityZones",
        "ec2:DescribeCapacityReservations",
        "ec2:DescribeImages",
        "ec2:DescribeLaunchTemplates",
        "ec2:DescribePlacementGroups",
        "ec2:DescribeSecurityGroups",
        "ec2:DescribeSubnets",
        "ssm:GetParameter",
        "ssm:GetParameters",
        "ec2:DeleteLaunchTemplate",
        "iam:GetInstanceProfile",
        "iam:ListInstanceProfiles",
        "iam:CreateInstanceProfile",
        "iam:TagInstanceProfile",
        "iam:AddRoleToInstanceProfile",
        "iam:RemoveRoleFromInstanceProfile",
        "iam:DeleteInstanceProfile",
        "iam:PassRole",
    },
    "conversion": set(),
}
OWNED = {"StringEquals": {"aws:ResourceTag/kubernetes.io/cluster/demo": "owned"}}
NODEPOOL = {"StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"}}
REGION = {"Ref": "AWS::Region"}


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_each_role_has_exactly_its_actions(synth: Synthesized, name: str) -> None:
    role = synth.stack.functions[name].role
    granted = {action for s in synth.policy_statements(role) for action in actions(s)}
    assert all(s["Effect"] == "Allow" for s in synth.policy_statements(role))
    assert granted - BOILERPLATE == EXPECTED_ACTIONS[name]
    assert granted >= BOILERPLATE
    assert synth.props(role).get("ManagedPolicyArns") is None
    assert synth.props(role)["AssumeRolePolicyDocument"]["Statement"] == [
        {"Action": "sts:AssumeRole", "Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}}
    ]


def test_every_role_is_tagged_for_pod_identity_abac(synth: Synthesized) -> None:
    roles = synth.of_type("AWS::IAM::Role")
    assert len(roles) == 7 + 1 + 1  # functions, forwarder, nodes
    cluster_arn = "arn:${AWS::Partition}:eks:${AWS::Region}:${AWS::AccountId}:cluster/demo"
    for role in roles.values():
        tags = {tag["Key"]: render(tag["Value"]) for tag in role["Properties"]["Tags"]}
        assert tags == {"eks:eks-cluster-name": "demo", "eks:eks-cluster-arn": cluster_arn}


def test_launch_statements_carry_karpenter_conditions(synth: Synthesized) -> None:
    sids = by_sid(synth, "provisioner")
    inputs = sids["LaunchFromImagesSubnetsSecurityGroups"]
    assert sorted(render(r) for r in resources(inputs)) == sorted(
        [
            "arn:${AWS::Partition}:ec2:${AWS::Region}::image/*",
            "arn:${AWS::Partition}:ec2:${AWS::Region}::snapshot/*",
            "arn:${AWS::Partition}:ec2:${AWS::Region}:*:security-group/*",
            "arn:${AWS::Partition}:ec2:${AWS::Region}:*:subnet/*",
            "arn:${AWS::Partition}:ec2:${AWS::Region}:*:placement-group/*",
            "arn:${AWS::Partition}:ec2:${AWS::Region}:*:capacity-reservation/*",
        ]
    )
    assert actions(inputs) == ["ec2:RunInstances", "ec2:CreateFleet"]
    templates = sids["LaunchFromOwnedLaunchTemplates"]
    assert templates["Condition"] == {**OWNED, **NODEPOOL}
    request_tags = {
        "StringEquals": {
            "aws:RequestTag/kubernetes.io/cluster/demo": "owned",
            "aws:RequestTag/eks:eks-cluster-name": "demo",
        },
        "StringLike": {"aws:RequestTag/karpenter.sh/nodepool": "*"},
    }
    create = sids["CreateTaggedInstancesAndFleets"]
    assert actions(create) == ["ec2:RunInstances", "ec2:CreateFleet"]
    assert create["Condition"] == request_tags
    assert {render(r).rsplit(":", 1)[1] for r in resources(create)} == {
        "fleet/*",
        "instance/*",
        "volume/*",
        "network-interface/*",
        "spot-instances-request/*",
    }  # not launch-template/*: a launch may only use an owned template (LaunchFromOwnedLaunchTemplates)
    templates_created = sids["CreateTaggedLaunchTemplates"]
    assert actions(templates_created) == ["ec2:CreateLaunchTemplate"]
    assert templates_created["Condition"] == request_tags
    tagging = sids["TagOnlyWhileCreating"]
    assert tagging["Condition"]["StringEquals"] == {
        **request_tags["StringEquals"],
        "ec2:CreateAction": ["RunInstances", "CreateFleet", "CreateLaunchTemplate"],
    }
    assert tagging["Condition"]["StringLike"] == request_tags["StringLike"]
    retag = sids["TagOwnedInstancesWithNodeClaimKeysOnly"]
    assert [render(r) for r in resources(retag)] == ["arn:${AWS::Partition}:ec2:${AWS::Region}:*:instance/*"]
    assert retag["Condition"] == {
        **OWNED,
        **NODEPOOL,
        "StringEqualsIfExists": {"aws:RequestTag/eks:eks-cluster-name": "demo"},
        "ForAllValues:StringEquals": {"aws:TagKeys": ["eks:eks-cluster-name", "karpenter.sh/nodeclaim", "Name"]},
    }


@pytest.mark.parametrize(
    ("name", "sid"),
    [
        ("termination", "TerminateOwnedInstances"),
        ("garbage_collection", "TerminateOwnedInstances"),
        ("garbage_collection", "DeleteOwnedLaunchTemplates"),
        ("nodeclass", "DeleteOwnedLaunchTemplates"),
    ],
)
def test_deletions_need_ownership_tags(synth: Synthesized, name: str, sid: str) -> None:
    statement = by_sid(synth, name)[sid]
    assert statement["Condition"] == {**OWNED, **NODEPOOL}


def test_instance_profile_statements(synth: Synthesized) -> None:
    sids = by_sid(synth, "nodeclass")
    profile_tags = {
        "StringEquals": {
            "aws:ResourceTag/kubernetes.io/cluster/demo": "owned",
            "aws:ResourceTag/topology.kubernetes.io/region": REGION,
        },
        "StringLike": {"aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*"},
    }
    request = {
        "StringEquals": {
            "aws:RequestTag/kubernetes.io/cluster/demo": "owned",
            "aws:RequestTag/eks:eks-cluster-name": "demo",
            "aws:RequestTag/topology.kubernetes.io/region": REGION,
        },
        "StringLike": {"aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*"},
    }
    assert sids["CreateTaggedInstanceProfiles"]["Condition"] == request
    assert sids["TagOwnedInstanceProfiles"]["Condition"] == {
        "StringEquals": {**profile_tags["StringEquals"], **request["StringEquals"]},
        "StringLike": {**profile_tags["StringLike"], **request["StringLike"]},
    }
    assert sids["AddNodeRoleToOwnedInstanceProfiles"]["Condition"] == profile_tags
    assert sids["DeleteOwnedInstanceProfiles"]["Condition"] == profile_tags
    assert by_sid(synth, "garbage_collection")["DeleteOwnedInstanceProfiles"]["Condition"] == profile_tags
    for sid in ("CreateTaggedInstanceProfiles", "TagOwnedInstanceProfiles", "DeleteOwnedInstanceProfiles"):
        assert [render(r) for r in resources(sids[sid])] == [
            "arn:${AWS::Partition}:iam::${AWS::AccountId}:instance-profile/*"
        ]


@pytest.mark.parametrize("name", ["provisioner", "nodeclass"])
def test_pass_role_is_node_role_to_ec2_only(synth: Synthesized, name: str) -> None:
    passes = [s for s in synth.policy_statements(synth.stack.functions[name].role) if "iam:PassRole" in actions(s)]
    assert passes == [
        {
            "Sid": "PassNodeRoleToEC2",
            "Action": "iam:PassRole",
            "Effect": "Allow",
            "Resource": synth.arn(synth.stack.node_role.role),
            "Condition": {"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}},
        }
    ]


@pytest.mark.parametrize("name", [n for n in FUNCTIONS if n != "conversion"])
def test_reads_and_cluster_discovery_are_scoped(synth: Synthesized, name: str) -> None:
    sids = by_sid(synth, name)
    discover = sids["DiscoverClusterEndpoint"]
    assert render(discover["Resource"]) == "arn:${AWS::Partition}:eks:${AWS::Region}:${AWS::AccountId}:cluster/demo"
    if "RegionalReads" in sids:
        reads = sids["RegionalReads"]
        assert all(action.startswith("ec2:Describe") for action in actions(reads))
        assert reads["Condition"] == {"StringEquals": {"aws:RequestedRegion": REGION}}
    if "ReadPublicAmiParameters" in sids:
        assert render(sids["ReadPublicAmiParameters"]["Resource"]) == (
            "arn:${AWS::Partition}:ssm:${AWS::Region}::parameter/aws/service/*"
        )
        assert "ReadAccountAmiParameters" not in sids  # the account's own parameters: the user's grant, as Karpenter


def test_queue_and_table_actions_name_their_resources(synth: Synthesized) -> None:
    for name, function in synth.stack.functions.items():
        for statement in synth.policy_statements(function.role):
            services = {action.split(":")[0] for action in actions(statement)}
            if services == {"sqs"}:
                queue = {
                    "interruption": synth.stack.interruption.queue,
                    "provisioner": synth.stack.cluster_events.provisioning_queue,
                }[name]
                if actions(statement) == ["sqs:SendMessage"]:  # malformed messages, to the dead-letter queue
                    queue = synth.stack.interruption.dead_letters
                    assert name == "interruption"
                assert statement["Resource"] == synth.arn(queue)
            if services == {"dynamodb"}:
                assert resources(statement) == [synth.arn(synth.stack.table)]


def test_node_role(synth: Synthesized) -> None:
    role = synth.props(synth.stack.node_role.role)
    assert role["RoleName"] == "KarpenterNodeRole-demo"
    assert role["AssumeRolePolicyDocument"]["Statement"] == [
        {"Action": "sts:AssumeRole", "Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}}
    ]
    assert sorted(render(arn).rsplit("/", 1)[1] for arn in role["ManagedPolicyArns"]) == sorted(
        [
            "AmazonEKSWorkerNodePolicy",
            "AmazonEKS_CNI_Policy",
            "AmazonEC2ContainerRegistryReadOnly",
            "AmazonSSMManagedInstanceCore",
        ]
    )


def test_forwarder_can_only_put_events_on_the_bus(synth: Synthesized) -> None:
    role = synth.stack.access.forwarder_role
    assert synth.policy_statements(role) == [
        {
            "Sid": "PutClusterEvents",
            "Action": "events:PutEvents",
            "Effect": "Allow",
            "Resource": synth.arn(synth.stack.cluster_events.bus),
        }
    ]
    trust = synth.props(role)["AssumeRolePolicyDocument"]["Statement"]
    assert trust == [
        {
            "Action": ["sts:AssumeRole", "sts:TagSession"],
            "Effect": "Allow",
            "Principal": {"Service": "pods.eks.amazonaws.com"},
            "Condition": {
                "StringEquals": {
                    "aws:RequestTag/eks-cluster-name": "demo",
                    "aws:RequestTag/kubernetes-namespace": "kube-system",
                    "aws:RequestTag/kubernetes-service-account": "serverless-karpenter-forwarder",
                }
            },
        }
    ]


def test_existing_node_role_and_vpc(variant: Synthesized) -> None:
    existing = "arn:aws:iam::123456789012:role/existing-node-role"
    assert not any("RoleName" in role["Properties"] for role in variant.of_type("AWS::IAM::Role").values())
    passes = [
        s
        for s in variant.policy_statements(variant.stack.functions["provisioner"].role)
        if s.get("Sid") == "PassNodeRoleToEC2"
    ]
    assert [s["Resource"] for s in passes] == [existing]
    network = [
        s
        for s in variant.policy_statements(variant.stack.functions["termination"].role)
        if s.get("Sid") == "LambdaVpcNetworkInterfaces"
    ]
    arns = [render(r) for r in resources(network[0])]
    assert "arn:${AWS::Partition}:ec2:${AWS::Region}:${AWS::AccountId}:subnet/subnet-0123456789abcdef0" in arns
    assert all("*:" not in r for r in arns)  # this account only
    assert mutating_on_wildcards_without_tags(variant, allowed_sids=("LambdaVpcNetworkInterfaces",)) == []
    config = variant.props(variant.stack.functions["termination"].function)["VpcConfig"]
    assert config["SubnetIds"] == ["subnet-0123456789abcdef0", "subnet-0fedcba9876543210"]
    assert len(config["SecurityGroupIds"]) == 1
