"""The cdk-nag (AwsSolutions) findings this stack acknowledges, each with the reason it is right here.

Wildcard acknowledgements are derived from the policies as synthesized: every `*` in a role's resources must
match a reason below or synth fails, so a new wildcard cannot slip in unexplained, and a role is only
acknowledged for the wildcards it really has.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aws_cdk import Acknowledgment, Stack, Validations
from aws_cdk import aws_iam as iam
from constructs import IConstruct

from infra.constructs.cluster_access import NODE_MANAGED_POLICIES
from infra.stacks.autoscaler_stack import AutoscalerStack

LATEST_PYTHON = "3.14"  # the newest Lambda Python runtime aws-cdk-lib knows (cdk-nag L1)

_OWNED = "kubernetes.io/cluster/<cluster>=owned"
# Statement Sid -> why its resources need a wildcard and what bounds it. A statement that CDK adds without a
# Sid is keyed by its actions' service (X-Ray, for active tracing).
WILDCARD_REASONS: dict[str, str] = {
    "logs": (
        "Step Functions delivers execution logs through CloudWatch Logs' log delivery API (CreateLogDelivery, "
        "PutResourcePolicy, DescribeLogGroups...), which has no resource-level permissions"
    ),
    "xray": "X-Ray PutTraceSegments and PutTelemetryRecords have no resource-level permissions (active tracing)",
    "RegionalReads": "EC2 Describe* actions have no resource-level permissions; aws:RequestedRegion limits them",
    "ReadPrices": "pricing:GetProducts has no resource-level permissions and only reads public prices",
    "ReadZonalShifts": (
        "arc-zonal-shift:GetManagedResource is authorized on *; the ResourceIdentifier condition narrows it to this "
        "cluster's ARN"
    ),
    "ListInstanceProfiles": "iam:ListInstanceProfiles has no resource-level permissions and only reads",
    "ReadInstanceProfiles": "Instance profile names are chosen per EC2NodeClass at run time; GetInstanceProfile reads",
    "ReadPublicAmiParameters": "Read-only access to AWS's public parameters naming the EKS-optimized AMIs",
    "LaunchFromImagesSubnetsSecurityGroups": (
        "AMIs, snapshots, subnets and security groups are inputs RunInstances/CreateFleet read without changing; "
        "EC2NodeClass selectors pick them at run time, so they cannot be named in advance"
    ),
    "LaunchFromOwnedLaunchTemplates": f"Only launch templates tagged {_OWNED} with a karpenter.sh/nodepool tag",
    "CreateTaggedInstancesAndFleets": (
        f"IDs do not exist before creation; creation requires the request tags {_OWNED}, eks:eks-cluster-name "
        "and karpenter.sh/nodepool"
    ),
    "CreateTaggedLaunchTemplates": (
        f"Launch template IDs do not exist before creation; creation requires the request tags {_OWNED}, "
        "eks:eks-cluster-name and karpenter.sh/nodepool"
    ),
    "TagOnlyWhileCreating": (
        "CreateTags only within RunInstances/CreateFleet/CreateLaunchTemplate (ec2:CreateAction) and only with "
        "the cluster's request tags"
    ),
    "TagOwnedInstancesWithNodeClaimKeysOnly": (
        f"Only instances tagged {_OWNED} with a nodepool tag, and only the keys Name, karpenter.sh/nodeclaim and "
        "eks:eks-cluster-name"
    ),
    "TerminateOwnedInstances": f"Only instances tagged {_OWNED} with a karpenter.sh/nodepool tag",
    "DeleteOwnedLaunchTemplates": f"Only launch templates tagged {_OWNED} with a karpenter.sh/nodepool tag",
    "CreateTaggedInstanceProfiles": (
        f"Profile names are chosen per EC2NodeClass; creation requires the request tags {_OWNED}, "
        "eks:eks-cluster-name, topology.kubernetes.io/region and karpenter.k8s.aws/ec2nodeclass"
    ),
    "TagOwnedInstanceProfiles": "Only profiles tagged for this cluster, region and an ec2nodeclass, keeping those tags",
    "AddNodeRoleToOwnedInstanceProfiles": "Only profiles tagged for this cluster, region and an ec2nodeclass",
    "DeleteOwnedInstanceProfiles": "Only profiles tagged for this cluster, region and an ec2nodeclass",
    "LambdaVpcNetworkInterfaces": (
        "VPC mode: Lambda manages the function's network interfaces with its role; their IDs are unknown in "
        "advance, and creation is limited to the configured subnets and security groups"
    ),
    "LambdaVpcDescribeNetworkInterfaces": "VPC mode: ENI and subnet Describe* have no resource-level permissions",
}

NODE_ROLE_REASON = (
    "The EKS node role needs exactly the AWS managed policies EKS documents for nodes (worker node, CNI, ECR "
    "pull, SSM); AWS keeps them current with the kubelet's and the CNI's needs, as Karpenter's own template does"
)


@dataclass(frozen=True)
class Acknowledged:
    path: str
    rule: str
    reason: str


def acknowledge_findings(stack: AutoscalerStack) -> list[Acknowledged]:
    """Acknowledge the stack's accepted findings; returns them (for the report and the tests)."""
    done: list[Acknowledged] = []

    def acknowledge(scope: IConstruct, rule: str, reason: str) -> None:
        Validations.of(scope).acknowledge(Acknowledgment(id=rule, reason=reason))
        done.append(Acknowledged(scope.node.path, rule, reason))

    roles: list[iam.Role] = [function.role for function in stack.functions.values()]
    if stack.access.forwarder_role is not None:
        roles.append(stack.access.forwarder_role)
    if stack.fast_sweep is not None:
        roles.append(stack.fast_sweep.machine.role)  # type: ignore[arg-type]  # a Role: the machine creates it
    for role in roles:
        for resource, reasons in sorted(_wildcard_reasons(stack, role).items()):
            acknowledge(role, f"AwsSolutions-IAM5[Resource::{resource}]", "; ".join(sorted(reasons)))
    if stack.config.python_version != LATEST_PYTHON:
        for function in stack.functions.values():
            acknowledge(
                function.function,
                "AwsSolutions-L1",
                f"Python {stack.config.python_version} is the runtime the dependencies layer is built and tested "
                f"for (SnapStart-capable); -c pythonVersion={LATEST_PYTHON} moves to the newest",
            )
    if stack.node_role.created:
        for name in NODE_MANAGED_POLICIES:
            acknowledge(
                stack.node_role.role,
                f"AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/{name}]",
                NODE_ROLE_REASON,
            )
    return done


def _wildcard_reasons(stack: Stack, role: iam.Role) -> dict[str, set[str]]:
    """Each wildcard resource of the role's policy, with the reasons of the statements that use it."""
    found: dict[str, set[str]] = {}
    policy = role.node.try_find_child("DefaultPolicy")
    if not isinstance(policy, iam.Policy):
        return found
    for statement in stack.resolve(policy.document).get("Statement", []):
        key = statement.get("Sid") or _service(statement)
        resources = statement.get("Resource", [])
        for resource in resources if isinstance(resources, list) else [resources]:
            rendered = _render(resource)
            if "*" not in rendered:
                continue
            if key not in WILDCARD_REASONS:
                raise ValueError(f"no recorded reason for {rendered} in statement {key}: add one to infra/nag.py")
            found.setdefault(rendered, set()).add(WILDCARD_REASONS[key])
    return found


def _service(statement: dict[str, Any]) -> str:
    actions = statement.get("Action", [])
    services = {action.split(":")[0] for action in (actions if isinstance(actions, list) else [actions])}
    return services.pop() if len(services) == 1 else ",".join(sorted(services))


def _render(value: Any) -> str:
    """A resolved CloudFormation value the way cdk-nag prints it: {"Ref": "AWS::Region"} -> <AWS::Region>."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "Ref" in value:
        return f"<{value['Ref']}>"
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        return "<{}.{}>".format(*value["Fn::GetAtt"])
    if isinstance(value, dict) and "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return str(separator).join(_render(part) for part in parts)
    return str(value)
