"""What each role must be able to do for its own cluster, and what it must not be able to do to anyone else.

Each case is (role, name, call builder); builders take the deployed ``Account`` for the stack's own ARNs.
"Other" resources are another cluster's in the same account and region, or resources outside this stack.
"""

from __future__ import annotations

from collections.abc import Callable

from tests.security.conftest import CLUSTER, ENV, Account, Call, Target, call, request_tags

Case = tuple[str, str, Callable[[Account], Call | list[Call]]]

R, A, P = ENV.region, ENV.account, ENV.partition
OWNED = f"kubernetes.io/cluster/{CLUSTER}"


def ec2(resource: str, *, region: str = R, account: str = A) -> str:
    return f"arn:{P}:ec2:{region}:{account}:{resource}"


IMAGE = f"arn:{P}:ec2:{R}::image/ami-0123456789abcdef0"
SUBNET, SECURITY_GROUP = ec2("subnet/subnet-0abc"), ec2("security-group/sg-0abc")
INSTANCE, VOLUME, ENI = ec2("instance/i-0abc"), ec2("volume/vol-0abc"), ec2("network-interface/eni-0abc")
FLEET, LAUNCH_TEMPLATE = ec2("fleet/fleet-0abc"), ec2("launch-template/lt-0abc")
PROFILE = f"arn:{P}:iam::{A}:instance-profile/demo_1234567890"
OTHER_ROLE = f"arn:{P}:iam::{A}:role/Admin"
OTHER_QUEUE = f"arn:{P}:sqs:{R}:{A}:other-cluster-interruption"
OTHER_TABLE = f"arn:{P}:dynamodb:{R}:{A}:table/other-cluster-state"
OTHER_BUS = f"arn:{P}:events:{R}:{A}:event-bus/serverless-karpenter-other"
DEFAULT_BUS = f"arn:{P}:events:{R}:{A}:event-bus/default"
OTHER_CLUSTER = f"arn:{P}:eks:{R}:{A}:cluster/other"
OWN_CLUSTER = f"arn:{P}:eks:{R}:{A}:cluster/{CLUSTER}"
AMI_PARAMETER = f"arn:{P}:ssm:{R}::parameter/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/standard"
SECRET_PARAMETER = f"arn:{P}:ssm:{R}:{A}:parameter/prod/db-password"

# Tags as Karpenter sets them, and as others' resources carry them
NODEPOOL_TAGS = {OWNED: "owned", "karpenter.sh/nodepool": "default"}
LAUNCH_TAGS = {**NODEPOOL_TAGS, "eks:eks-cluster-name": CLUSTER, "karpenter.sh/nodeclaim": "default-x7k2p"}
OTHER_CLUSTER_TAGS = {"kubernetes.io/cluster/other": "owned", "karpenter.sh/nodepool": "default"}
OTHER_LAUNCH_TAGS = {**OTHER_CLUSTER_TAGS, "eks:eks-cluster-name": "other"}
MANAGED_NODEGROUP_TAGS = {OWNED: "owned", "eks:nodegroup-name": "system"}  # this cluster's, but not Karpenter's
SHARED_TAGS = {f"kubernetes.io/cluster/{CLUSTER}": "shared", "karpenter.sh/nodepool": "default"}
PROFILE_TAGS = {OWNED: "owned", "topology.kubernetes.io/region": R, "karpenter.k8s.aws/ec2nodeclass": "default"}
PROFILE_REQUEST_TAGS = {**PROFILE_TAGS, "eks:eks-cluster-name": CLUSTER}

OWNED_INSTANCE = Target(INSTANCE, LAUNCH_TAGS)
OWNED_TEMPLATE = Target(LAUNCH_TEMPLATE, NODEPOOL_TAGS)
OWNED_PROFILE = Target(PROFILE, PROFILE_TAGS)
TO_EC2 = {"iam:PassedToService": "ec2.amazonaws.com"}
CONSUME = ("sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility", "sqs:GetQueueAttributes")
TABLE_ACTIONS = ("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem")


def launch(action: str, tags: dict[str, str], template: Target = OWNED_TEMPLATE) -> Call:
    """RunInstances / CreateFleet: the resources it creates carry ``tags``; it reads the template and inputs."""
    created = [Target(INSTANCE), Target(VOLUME), Target(ENI)] + ([Target(FLEET)] if action == "ec2:CreateFleet" else [])
    inputs = [Target(IMAGE), Target(SUBNET), Target(SECURITY_GROUP), template]
    return Call(action, (*created, *inputs), request_tags(tags))


def tag(target: Target, tags: dict[str, str], *, creating: str = "") -> Call:
    context = {**request_tags(tags), **({"ec2:CreateAction": creating} if creating else {})}
    return call("ec2:CreateTags", target, context=context)


def each(actions: tuple[str, ...], arn: str) -> list[Call]:
    return [call(action, arn) for action in actions]


def _allowed_calls() -> list[Case]:
    own_logs = [
        (name, "write-own-logs", lambda a, n=name: call("logs:PutLogEvents", a.log_stream(n)))
        for name in ("provisioner", "interruption", "disruption", "termination", "garbage_collection", "nodeclass")
    ]
    return [
        *own_logs,
        ("provisioner", "run-instances-tagged-for-its-cluster", lambda a: launch("ec2:RunInstances", LAUNCH_TAGS)),
        ("provisioner", "create-fleet-tagged-for-its-cluster", lambda a: launch("ec2:CreateFleet", LAUNCH_TAGS)),
        (
            "provisioner",
            "create-tagged-launch-template",
            lambda a: call("ec2:CreateLaunchTemplate", LAUNCH_TEMPLATE, context=request_tags(LAUNCH_TAGS)),
        ),
        ("provisioner", "tag-while-launching", lambda a: tag(Target(INSTANCE), LAUNCH_TAGS, creating="RunInstances")),
        (
            "provisioner",
            "tag-own-instance-with-nodeclaim-and-name",
            lambda a: tag(OWNED_INSTANCE, {"karpenter.sh/nodeclaim": "default-x7k2p", "Name": "default-x7k2p"}),
        ),
        ("provisioner", "pass-node-role-to-ec2", lambda a: call("iam:PassRole", a.node_role, context=TO_EC2)),
        ("provisioner", "consume-provisioning-queue", lambda a: each(CONSUME, a.provisioning_queue)),
        ("provisioner", "use-state-table", lambda a: each(TABLE_ACTIONS, a.table)),
        ("provisioner", "describe-in-its-region", lambda a: call("ec2:DescribeInstanceTypes", "*")),
        ("provisioner", "read-public-ami-parameter", lambda a: call("ssm:GetParameter", AMI_PARAMETER)),
        ("provisioner", "read-public-ami-parameters", lambda a: call("ssm:GetParameters", AMI_PARAMETER)),
        ("provisioner", "read-prices", lambda a: call("pricing:GetProducts", "*")),
        ("provisioner", "discover-own-cluster", lambda a: call("eks:DescribeCluster", OWN_CLUSTER)),
        ("provisioner", "read-instance-profile", lambda a: call("iam:GetInstanceProfile", PROFILE)),
        ("interruption", "consume-interruption-queue", lambda a: each(CONSUME, a.interruption_queue)),
        ("interruption", "dead-letter-malformed", lambda a: call("sqs:SendMessage", a.interruption_dlq)),
        ("interruption", "use-state-table", lambda a: each(TABLE_ACTIONS, a.table)),
        ("interruption", "discover-own-cluster", lambda a: call("eks:DescribeCluster", OWN_CLUSTER)),
        ("disruption", "describe-in-its-region", lambda a: call("ec2:DescribeInstances", "*")),
        ("disruption", "read-public-ami-parameter", lambda a: call("ssm:GetParameter", AMI_PARAMETER)),
        ("disruption", "use-state-table", lambda a: each(TABLE_ACTIONS, a.table)),
        ("termination", "terminate-own-instance", lambda a: call("ec2:TerminateInstances", OWNED_INSTANCE)),
        ("termination", "describe-instances", lambda a: call("ec2:DescribeInstances", "*")),
        ("termination", "use-state-table", lambda a: each(TABLE_ACTIONS, a.table)),
        ("garbage_collection", "terminate-own-instance", lambda a: call("ec2:TerminateInstances", OWNED_INSTANCE)),
        (
            "garbage_collection",
            "delete-own-launch-template",
            lambda a: call("ec2:DeleteLaunchTemplate", OWNED_TEMPLATE),
        ),
        (
            "garbage_collection",
            "delete-own-instance-profile",
            lambda a: [
                call("iam:RemoveRoleFromInstanceProfile", OWNED_PROFILE),
                call("iam:DeleteInstanceProfile", OWNED_PROFILE),
            ],
        ),
        ("garbage_collection", "list-instance-profiles", lambda a: call("iam:ListInstanceProfiles", "*")),
        (
            "nodeclass",
            "create-tagged-instance-profile",
            lambda a: call("iam:CreateInstanceProfile", PROFILE, context=request_tags(PROFILE_REQUEST_TAGS)),
        ),
        (
            "nodeclass",
            "tag-own-instance-profile",
            lambda a: call("iam:TagInstanceProfile", OWNED_PROFILE, context=request_tags(PROFILE_REQUEST_TAGS)),
        ),
        (
            "nodeclass",
            "add-node-role-to-own-profile",
            lambda a: [
                call("iam:AddRoleToInstanceProfile", OWNED_PROFILE),
                call("iam:PassRole", a.node_role, context=TO_EC2),
            ],
        ),
        ("nodeclass", "delete-own-instance-profile", lambda a: call("iam:DeleteInstanceProfile", OWNED_PROFILE)),
        ("nodeclass", "delete-own-launch-template", lambda a: call("ec2:DeleteLaunchTemplate", OWNED_TEMPLATE)),
        ("nodeclass", "describe-subnets", lambda a: call("ec2:DescribeSubnets", "*")),
        ("conversion", "write-own-logs", lambda a: call("logs:PutLogEvents", a.log_stream("conversion"))),
        ("forwarder", "put-events-on-cluster-bus", lambda a: call("events:PutEvents", a.bus)),
    ]


ALLOWED: list[Case] = _allowed_calls()


def _denied_calls() -> list[Case]:
    untagged, other_instance = Target(INSTANCE), Target(INSTANCE, OTHER_LAUNCH_TAGS)
    other_template, other_profile = (
        Target(LAUNCH_TEMPLATE, OTHER_CLUSTER_TAGS),
        Target(
            PROFILE,
            {
                "kubernetes.io/cluster/other": "owned",
                "topology.kubernetes.io/region": R,
                "karpenter.k8s.aws/ec2nodeclass": "default",
            },
        ),
    )
    profile_elsewhere = Target(PROFILE, {**PROFILE_TAGS, "topology.kubernetes.io/region": "eu-west-1"})
    without = {k: v for k, v in LAUNCH_TAGS.items() if k != "karpenter.sh/nodepool"}
    hijack = {OWNED: "owned", "karpenter.sh/nodepool": "default"}
    terminate = "ec2:TerminateInstances"
    cases: list[Case] = [
        ("provisioner", "run-untagged-instances", lambda a: launch("ec2:RunInstances", {})),
        ("provisioner", "run-instances-for-another-cluster", lambda a: launch("ec2:RunInstances", OTHER_LAUNCH_TAGS)),
        ("provisioner", "run-instances-without-nodepool-tag", lambda a: launch("ec2:RunInstances", without)),
        (
            "provisioner",
            "run-instances-naming-another-eks-cluster",
            lambda a: launch("ec2:RunInstances", {**LAUNCH_TAGS, "eks:eks-cluster-name": "other"}),
        ),
        (
            "provisioner",
            "run-from-another-clusters-launch-template",
            lambda a: launch("ec2:RunInstances", LAUNCH_TAGS, template=other_template),
        ),
        ("provisioner", "create-fleet-untagged", lambda a: launch("ec2:CreateFleet", {})),
        ("provisioner", "create-untagged-launch-template", lambda a: call("ec2:CreateLaunchTemplate", LAUNCH_TEMPLATE)),
        (
            "provisioner",
            "create-launch-template-for-another-cluster",
            lambda a: call("ec2:CreateLaunchTemplate", LAUNCH_TEMPLATE, context=request_tags(OTHER_LAUNCH_TAGS)),
        ),
        ("provisioner", "claim-another-clusters-instance-by-tagging", lambda a: tag(other_instance, hijack)),
        ("provisioner", "claim-an-untagged-instance-by-tagging", lambda a: tag(untagged, LAUNCH_TAGS)),
        ("provisioner", "retag-ownership-of-own-instance", lambda a: tag(OWNED_INSTANCE, {OWNED: "shared"})),
        (
            "provisioner",
            "rename-own-instances-eks-cluster",
            lambda a: tag(OWNED_INSTANCE, {"eks:eks-cluster-name": "other"}),
        ),
        ("provisioner", "terminate-own-instance", lambda a: call(terminate, OWNED_INSTANCE)),
        ("provisioner", "pass-another-role", lambda a: call("iam:PassRole", OTHER_ROLE, context=TO_EC2)),
        (
            "provisioner",
            "pass-node-role-to-lambda",
            lambda a: call("iam:PassRole", a.node_role, context={"iam:PassedToService": "lambda.amazonaws.com"}),
        ),
        ("provisioner", "read-interruption-queue", lambda a: call("sqs:ReceiveMessage", a.interruption_queue)),
        ("provisioner", "read-another-queue", lambda a: call("sqs:ReceiveMessage", OTHER_QUEUE)),
        ("provisioner", "send-to-provisioning-queue", lambda a: call("sqs:SendMessage", a.provisioning_queue)),
        ("provisioner", "read-another-table", lambda a: call("dynamodb:GetItem", OTHER_TABLE)),
        (
            "provisioner",
            "describe-in-another-region",
            lambda a: call("ec2:DescribeInstances", "*", context={"aws:RequestedRegion": "eu-west-1"}),
        ),
        ("provisioner", "discover-another-cluster", lambda a: call("eks:DescribeCluster", OTHER_CLUSTER)),
        ("provisioner", "read-private-parameter", lambda a: call("ssm:GetParameter", SECRET_PARAMETER)),
        ("provisioner", "read-private-parameters", lambda a: call("ssm:GetParameters", SECRET_PARAMETER)),
        ("provisioner", "put-events-on-cluster-bus", lambda a: call("events:PutEvents", a.bus)),
        ("interruption", "read-provisioning-queue", lambda a: call("sqs:ReceiveMessage", a.provisioning_queue)),
        ("interruption", "read-its-dead-letters", lambda a: call("sqs:ReceiveMessage", a.interruption_dlq)),
        ("interruption", "read-another-queue", lambda a: call("sqs:ReceiveMessage", OTHER_QUEUE)),
        ("interruption", "send-to-another-queue", lambda a: call("sqs:SendMessage", OTHER_QUEUE)),
        ("interruption", "read-another-table", lambda a: call("dynamodb:GetItem", OTHER_TABLE)),
        ("interruption", "terminate-own-instance", lambda a: call(terminate, OWNED_INSTANCE)),
        ("interruption", "put-events-on-another-bus", lambda a: call("events:PutEvents", OTHER_BUS)),
        ("disruption", "terminate-own-instance", lambda a: call(terminate, OWNED_INSTANCE)),
        ("disruption", "read-another-queue", lambda a: call("sqs:ReceiveMessage", OTHER_QUEUE)),
        ("disruption", "read-another-table", lambda a: call("dynamodb:Query", OTHER_TABLE)),
        ("disruption", "read-private-parameter", lambda a: call("ssm:GetParameter", SECRET_PARAMETER)),
        ("disruption", "tag-own-instance", lambda a: tag(OWNED_INSTANCE, {"Name": "x"})),
        ("termination", "delete-own-launch-template", lambda a: call("ec2:DeleteLaunchTemplate", OWNED_TEMPLATE)),
        ("termination", "run-instances", lambda a: launch("ec2:RunInstances", LAUNCH_TAGS)),
        ("termination", "read-another-table", lambda a: call("dynamodb:GetItem", OTHER_TABLE)),
        (
            "garbage_collection",
            "delete-another-clusters-launch-template",
            lambda a: call("ec2:DeleteLaunchTemplate", other_template),
        ),
        (
            "garbage_collection",
            "delete-untagged-launch-template",
            lambda a: call("ec2:DeleteLaunchTemplate", LAUNCH_TEMPLATE),
        ),
        (
            "garbage_collection",
            "delete-another-clusters-profile",
            lambda a: call("iam:DeleteInstanceProfile", other_profile),
        ),
        (
            "garbage_collection",
            "delete-another-regions-profile",
            lambda a: call("iam:DeleteInstanceProfile", profile_elsewhere),
        ),
        ("garbage_collection", "delete-untagged-profile", lambda a: call("iam:DeleteInstanceProfile", PROFILE)),
        (
            "garbage_collection",
            "create-instance-profile",
            lambda a: call("iam:CreateInstanceProfile", PROFILE, context=request_tags(PROFILE_REQUEST_TAGS)),
        ),
        ("garbage_collection", "pass-node-role", lambda a: call("iam:PassRole", a.node_role, context=TO_EC2)),
        ("garbage_collection", "read-another-table", lambda a: call("dynamodb:GetItem", OTHER_TABLE)),
        ("nodeclass", "create-untagged-instance-profile", lambda a: call("iam:CreateInstanceProfile", PROFILE)),
        (
            "nodeclass",
            "create-profile-for-another-cluster",
            lambda a: call(
                "iam:CreateInstanceProfile",
                PROFILE,
                context=request_tags({**PROFILE_REQUEST_TAGS, OWNED: "shared", "kubernetes.io/cluster/other": "owned"}),
            ),
        ),
        (
            "nodeclass",
            "create-profile-for-another-region",
            lambda a: call(
                "iam:CreateInstanceProfile",
                PROFILE,
                context=request_tags({**PROFILE_REQUEST_TAGS, "topology.kubernetes.io/region": "eu-west-1"}),
            ),
        ),
        (
            "nodeclass",
            "create-profile-without-nodeclass-tag",
            lambda a: call(
                "iam:CreateInstanceProfile",
                PROFILE,
                context=request_tags(
                    {k: v for k, v in PROFILE_REQUEST_TAGS.items() if k != "karpenter.k8s.aws/ec2nodeclass"}
                ),
            ),
        ),
        (
            "nodeclass",
            "claim-another-clusters-profile-by-tagging",
            lambda a: call("iam:TagInstanceProfile", other_profile, context=request_tags(PROFILE_REQUEST_TAGS)),
        ),
        (
            "nodeclass",
            "add-role-to-another-clusters-profile",
            lambda a: call("iam:AddRoleToInstanceProfile", other_profile),
        ),
        ("nodeclass", "delete-another-clusters-profile", lambda a: call("iam:DeleteInstanceProfile", other_profile)),
        ("nodeclass", "pass-another-role", lambda a: call("iam:PassRole", OTHER_ROLE, context=TO_EC2)),
        (
            "nodeclass",
            "pass-node-role-to-another-service",
            lambda a: call("iam:PassRole", a.node_role, context={"iam:PassedToService": "ecs-tasks.amazonaws.com"}),
        ),
        (
            "nodeclass",
            "delete-another-clusters-launch-template",
            lambda a: call("ec2:DeleteLaunchTemplate", other_template),
        ),
        ("nodeclass", "terminate-own-instance", lambda a: call(terminate, OWNED_INSTANCE)),
        ("nodeclass", "use-state-table", lambda a: call("dynamodb:GetItem", a.table)),
        ("conversion", "discover-own-cluster", lambda a: call("eks:DescribeCluster", OWN_CLUSTER)),
        ("conversion", "use-state-table", lambda a: call("dynamodb:GetItem", a.table)),
        ("conversion", "read-interruption-queue", lambda a: call("sqs:ReceiveMessage", a.interruption_queue)),
        (
            "conversion",
            "write-another-functions-logs",
            lambda a: call("logs:PutLogEvents", a.log_stream("provisioner")),
        ),
        ("forwarder", "put-events-on-default-bus", lambda a: call("events:PutEvents", DEFAULT_BUS)),
        ("forwarder", "put-events-on-another-bus", lambda a: call("events:PutEvents", OTHER_BUS)),
        ("forwarder", "send-to-provisioning-queue", lambda a: call("sqs:SendMessage", a.provisioning_queue)),
        ("forwarder", "use-state-table", lambda a: call("dynamodb:GetItem", a.table)),
        ("forwarder", "discover-own-cluster", lambda a: call("eks:DescribeCluster", OWN_CLUSTER)),
    ]
    for name in ("termination", "garbage_collection"):
        cases += [
            (name, "terminate-another-clusters-instance", lambda a: call(terminate, other_instance)),
            (name, "terminate-untagged-instance", lambda a: call(terminate, untagged)),
            (
                name,
                "terminate-managed-nodegroup-instance",
                lambda a: call(terminate, Target(INSTANCE, MANAGED_NODEGROUP_TAGS)),
            ),
            (name, "terminate-shared-instance", lambda a: call(terminate, Target(INSTANCE, SHARED_TAGS))),
        ]
    return cases


DENIED: list[Case] = _denied_calls()

# Whatever a role is for, none may change IAM, assume other roles or read secrets and data.
ESCALATIONS: list[tuple[str, str]] = [
    ("iam:CreateRole", f"arn:{P}:iam::{A}:role/new"),
    ("iam:PutRolePolicy", f"arn:{P}:iam::{A}:role/*"),
    ("iam:AttachRolePolicy", OTHER_ROLE),
    ("iam:UpdateAssumeRolePolicy", OTHER_ROLE),
    ("iam:CreateAccessKey", f"arn:{P}:iam::{A}:user/admin"),
    ("sts:AssumeRole", OTHER_ROLE),
    ("ec2:ModifyInstanceAttribute", INSTANCE),
    ("ec2:CreateLaunchTemplateVersion", LAUNCH_TEMPLATE),
    ("lambda:UpdateFunctionCode", f"arn:{P}:lambda:{R}:{A}:function:any"),
    ("secretsmanager:GetSecretValue", f"arn:{P}:secretsmanager:{R}:{A}:secret:db"),
    ("kms:Decrypt", f"arn:{P}:kms:{R}:{A}:key/0000"),
    ("s3:GetObject", f"arn:{P}:s3:::bucket/key"),
    ("eks:UpdateClusterConfig", OWN_CLUSTER),
]
