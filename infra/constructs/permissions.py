"""Karpenter's controller policy, split into capabilities and scoped to one cluster by tags.

Every mutating action either names its resource (the node role, the queue, the table, the cluster) or carries an
`aws:RequestTag` / `aws:ResourceTag` condition on `kubernetes.io/cluster/<name>=owned` (plus the nodepool or
ec2nodeclass tag), so a function of one cluster cannot touch another cluster's instances, launch templates or
instance profiles. Reads are limited to the stack's region with `aws:RequestedRegion`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from aws_cdk import Aws
from aws_cdk import aws_iam as iam

from infra.catalog import Capability, FunctionSpec


@dataclass(frozen=True)
class ClusterScope:
    """The names every condition is built from; ARNs may be CloudFormation tokens."""

    cluster_name: str
    cluster_arn: str
    node_role_arn: str

    @property
    def owned_key(self) -> str:
        return f"kubernetes.io/cluster/{self.cluster_name}"

    def ec2_arn(self, resource: str, account: str = "*") -> str:
        return f"arn:{Aws.PARTITION}:ec2:{Aws.REGION}:{account}:{resource}"

    @property
    def instance_profiles_arn(self) -> str:
        return f"arn:{Aws.PARTITION}:iam::{Aws.ACCOUNT_ID}:instance-profile/*"

    def request_tags(self) -> dict[str, dict[str, object]]:
        """The tags a launch must carry: this cluster owns it, a nodepool made it."""
        return {
            "StringEquals": {
                f"aws:RequestTag/{self.owned_key}": "owned",
                "aws:RequestTag/eks:eks-cluster-name": self.cluster_name,
            },
            "StringLike": {"aws:RequestTag/karpenter.sh/nodepool": "*"},
        }

    def owned_resource_tags(self) -> dict[str, dict[str, object]]:
        """The tags an existing instance or launch template carries when this cluster's nodepools own it."""
        return {
            "StringEquals": {f"aws:ResourceTag/{self.owned_key}": "owned"},
            "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"},
        }

    def profile_resource_tags(self) -> dict[str, dict[str, object]]:
        """The tags an instance profile carries when this cluster's EC2NodeClass in this region made it."""
        return {
            "StringEquals": {
                f"aws:ResourceTag/{self.owned_key}": "owned",
                "aws:ResourceTag/topology.kubernetes.io/region": Aws.REGION,
            },
            "StringLike": {"aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*"},
        }

    def profile_request_tags(self) -> dict[str, dict[str, object]]:
        return {
            "StringEquals": {
                f"aws:RequestTag/{self.owned_key}": "owned",
                "aws:RequestTag/eks:eks-cluster-name": self.cluster_name,
                "aws:RequestTag/topology.kubernetes.io/region": Aws.REGION,
            },
            "StringLike": {"aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*"},
        }

    def pass_node_role(self) -> iam.PolicyStatement:
        return iam.PolicyStatement(
            sid="PassNodeRoleToEC2",
            actions=["iam:PassRole"],
            resources=[self.node_role_arn],
            conditions={"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}},
        )


# Resources an instance is created from; RunInstances needs them but does not change them.
# Capacity reservations are inputs too (Karpenter's scoped instance access): a reserved launch targets one.
_LAUNCH_INPUTS = (
    "image/*",
    "snapshot/*",
    "security-group/*",
    "subnet/*",
    "placement-group/*",
    "capacity-reservation/*",
)
# Resources a launch creates: they must carry the cluster's request tags.
_LAUNCH_OUTPUTS = (
    "fleet/*",
    "instance/*",
    "volume/*",
    "network-interface/*",
    "launch-template/*",
    "spot-instances-request/*",
)


def _launch(scope: ClusterScope) -> list[iam.PolicyStatement]:
    def inputs(resource: str) -> str:
        # AMIs and snapshots are owned by other accounts (Amazon's), so their ARNs carry no account.
        return scope.ec2_arn(resource, account="" if resource in ("image/*", "snapshot/*") else "*")

    outputs = [scope.ec2_arn(resource) for resource in _LAUNCH_OUTPUTS]
    return [
        iam.PolicyStatement(
            sid="LaunchFromImagesSubnetsSecurityGroups",
            actions=["ec2:RunInstances", "ec2:CreateFleet"],
            resources=[inputs(resource) for resource in _LAUNCH_INPUTS],
        ),
        iam.PolicyStatement(
            sid="LaunchFromOwnedLaunchTemplates",
            actions=["ec2:RunInstances", "ec2:CreateFleet"],
            resources=[scope.ec2_arn("launch-template/*")],
            conditions=scope.owned_resource_tags(),
        ),
        # Launches name their launch template as a resource too: only the owned-template statement above may
        # allow that, or request tags alone would let a launch use another cluster's template.
        iam.PolicyStatement(
            sid="CreateTaggedInstancesAndFleets",
            actions=["ec2:RunInstances", "ec2:CreateFleet"],
            resources=[r for r in outputs if not r.endswith("launch-template/*")],
            conditions=scope.request_tags(),
        ),
        iam.PolicyStatement(
            sid="CreateTaggedLaunchTemplates",
            actions=["ec2:CreateLaunchTemplate"],
            resources=[scope.ec2_arn("launch-template/*")],
            conditions=scope.request_tags(),
        ),
        iam.PolicyStatement(
            sid="TagOnlyWhileCreating",
            actions=["ec2:CreateTags"],
            resources=outputs,
            conditions={
                "StringEquals": {
                    **scope.request_tags()["StringEquals"],
                    "ec2:CreateAction": ["RunInstances", "CreateFleet", "CreateLaunchTemplate"],
                },
                "StringLike": scope.request_tags()["StringLike"],
            },
        ),
        scope.pass_node_role(),
    ]


def _tag_owned_instances(scope: ClusterScope) -> list[iam.PolicyStatement]:
    return [
        iam.PolicyStatement(
            sid="TagOwnedInstancesWithNodeClaimKeysOnly",
            actions=["ec2:CreateTags"],
            resources=[scope.ec2_arn("instance/*")],
            conditions={
                **scope.owned_resource_tags(),
                "StringEqualsIfExists": {"aws:RequestTag/eks:eks-cluster-name": scope.cluster_name},
                "ForAllValues:StringEquals": {
                    "aws:TagKeys": ["eks:eks-cluster-name", "karpenter.sh/nodeclaim", "Name"]
                },
            },
        )
    ]


def _terminate(scope: ClusterScope) -> list[iam.PolicyStatement]:
    return [
        iam.PolicyStatement(
            sid="TerminateOwnedInstances",
            actions=["ec2:TerminateInstances"],
            resources=[scope.ec2_arn("instance/*")],
            conditions=scope.owned_resource_tags(),
        )
    ]


def _delete_launch_templates(scope: ClusterScope) -> list[iam.PolicyStatement]:
    return [
        iam.PolicyStatement(
            sid="DeleteOwnedLaunchTemplates",
            actions=["ec2:DeleteLaunchTemplate"],
            resources=[scope.ec2_arn("launch-template/*")],
            conditions=scope.owned_resource_tags(),
        )
    ]


def _ssm(scope: ClusterScope) -> list[iam.PolicyStatement]:
    return [
        iam.PolicyStatement(
            sid="ReadPublicAmiParameters",
            # The AMI resolver reads them in batches (GetParameters); GetParameter as Karpenter's policy has it.
            actions=["ssm:GetParameter", "ssm:GetParameters"],
            resources=[f"arn:{Aws.PARTITION}:ssm:{Aws.REGION}::parameter/aws/service/*"],
        ),
        # amiSelectorTerms[].ssmParameter naming the account's own parameters: not granted, as Karpenter's default
        # policy grants only the public ones. A wildcard on the account's parameters would let every function read
        # whatever the account keeps in Parameter Store; the user grants the paths their AMI parameters live under.
    ]


def _pricing(scope: ClusterScope) -> list[iam.PolicyStatement]:
    # The Pricing API has no resource-level permissions.
    return [iam.PolicyStatement(sid="ReadPrices", actions=["pricing:GetProducts"], resources=["*"])]


def _zonal_shift_status(scope: ClusterScope) -> list[iam.PolicyStatement]:
    # ARC authorizes GetManagedResource on "*", narrowed to the resource the call names (Karpenter's policy).
    return [
        iam.PolicyStatement(
            sid="ReadZonalShifts",
            actions=["arc-zonal-shift:GetManagedResource"],
            resources=["*"],
            conditions={"StringEquals": {"arc-zonal-shift:ResourceIdentifier": scope.cluster_arn}},
        )
    ]


def _read_instance_profiles(scope: ClusterScope) -> list[iam.PolicyStatement]:
    return [
        iam.PolicyStatement(
            sid="ReadInstanceProfiles", actions=["iam:GetInstanceProfile"], resources=[scope.instance_profiles_arn]
        ),
        # ListInstanceProfiles has no resource-level permissions.
        iam.PolicyStatement(sid="ListInstanceProfiles", actions=["iam:ListInstanceProfiles"], resources=["*"]),
    ]


def _manage_instance_profiles(scope: ClusterScope) -> list[iam.PolicyStatement]:
    return [
        iam.PolicyStatement(
            sid="CreateTaggedInstanceProfiles",
            actions=["iam:CreateInstanceProfile"],
            resources=[scope.instance_profiles_arn],
            conditions=scope.profile_request_tags(),
        ),
        iam.PolicyStatement(
            sid="TagOwnedInstanceProfiles",
            actions=["iam:TagInstanceProfile"],
            resources=[scope.instance_profiles_arn],
            conditions={
                "StringEquals": {
                    **scope.profile_resource_tags()["StringEquals"],
                    **scope.profile_request_tags()["StringEquals"],
                },
                "StringLike": {
                    **scope.profile_resource_tags()["StringLike"],
                    **scope.profile_request_tags()["StringLike"],
                },
            },
        ),
        iam.PolicyStatement(
            sid="AddNodeRoleToOwnedInstanceProfiles",
            actions=["iam:AddRoleToInstanceProfile"],
            resources=[scope.instance_profiles_arn],
            conditions=scope.profile_resource_tags(),
        ),
        # Adding a role to an instance profile passes it.
        scope.pass_node_role(),
    ]


def _delete_instance_profiles(scope: ClusterScope) -> list[iam.PolicyStatement]:
    return [
        iam.PolicyStatement(
            sid="DeleteOwnedInstanceProfiles",
            actions=["iam:RemoveRoleFromInstanceProfile", "iam:DeleteInstanceProfile"],
            resources=[scope.instance_profiles_arn],
            conditions=scope.profile_resource_tags(),
        )
    ]


_BUILDERS: dict[Capability, Callable[[ClusterScope], list[iam.PolicyStatement]]] = {
    Capability.SSM_PUBLIC_PARAMETERS: _ssm,
    Capability.PRICING: _pricing,
    Capability.LAUNCH_INSTANCES: _launch,
    Capability.TAG_OWNED_INSTANCES: _tag_owned_instances,
    Capability.TERMINATE_INSTANCES: _terminate,
    Capability.DELETE_LAUNCH_TEMPLATES: _delete_launch_templates,
    Capability.READ_INSTANCE_PROFILES: _read_instance_profiles,
    Capability.MANAGE_INSTANCE_PROFILES: _manage_instance_profiles,
    Capability.DELETE_INSTANCE_PROFILES: _delete_instance_profiles,
    Capability.ZONAL_SHIFT_STATUS: _zonal_shift_status,
}


def statements_for(spec: FunctionSpec, scope: ClusterScope) -> list[iam.PolicyStatement]:
    """The AWS permissions of one function, except those granted by the resources it uses (queue, table, logs)."""
    statements: list[iam.PolicyStatement] = []
    if spec.kubernetes:
        statements.append(
            iam.PolicyStatement(
                sid="DiscoverClusterEndpoint", actions=["eks:DescribeCluster"], resources=[scope.cluster_arn]
            )
        )
    if spec.ec2_reads:
        statements.append(
            iam.PolicyStatement(
                sid="RegionalReads",
                actions=list(spec.ec2_reads),
                resources=["*"],  # EC2 Describe* actions have no resource-level permissions
                conditions={"StringEquals": {"aws:RequestedRegion": Aws.REGION}},
            )
        )
    sids: set[str] = {statement.sid for statement in statements if statement.sid}
    for capability in sorted(spec.capabilities, key=lambda capability: capability.name):
        builder = _BUILDERS.get(capability)  # STATE_TABLE is granted by the table itself
        for statement in builder(scope) if builder else []:
            if statement.sid not in sids:  # PassNodeRoleToEC2 comes from two capabilities
                sids.add(statement.sid or "")
                statements.append(statement)
    return statements
