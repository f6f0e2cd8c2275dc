"""What each function is and what it may do: one row per function, read by the stack.

Permissions are named capabilities (`infra/constructs/permissions.py` turns each into scoped IAM statements),
so a function's reach is readable here in one line and split from Karpenter's single controller policy.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from autoscaler import routing


class Capability(Enum):
    """A slice of Karpenter's controller policy, granted to the functions that need it."""

    SSM_PUBLIC_PARAMETERS = "read the public SSM parameters that name EKS-optimized AMIs"
    PRICING = "read on-demand prices from the Pricing API"
    LAUNCH_INSTANCES = "launch instances and launch templates tagged for this cluster, passing the node role"
    TAG_OWNED_INSTANCES = "add the Name / karpenter.sh/nodeclaim / eks:eks-cluster-name tags to owned instances"
    TERMINATE_INSTANCES = "terminate instances tagged as owned by this cluster"
    DELETE_LAUNCH_TEMPLATES = "delete launch templates tagged as owned by this cluster"
    READ_INSTANCE_PROFILES = "list and read instance profiles"
    MANAGE_INSTANCE_PROFILES = "create and tag instance profiles for this cluster and add the node role to them"
    DELETE_INSTANCE_PROFILES = "remove roles from and delete instance profiles tagged for this cluster"
    STATE_TABLE = "read and write the state table (unavailable offerings, idempotency records, leases)"
    ZONAL_SHIFT_STATUS = "read the ARC zonal shifts and autoshifts of this cluster (used with enableZonalShift)"


@dataclass(frozen=True)
class FunctionSpec:
    name: str
    description: str
    memory_mb: int
    timeout_seconds: int
    kubernetes: bool = True  # talks to the API server: eks:DescribeCluster and an access entry
    ec2_reads: tuple[str, ...] = ()  # regional ec2:Describe* actions, limited with aws:RequestedRegion
    capabilities: frozenset[Capability] = frozenset()


_INSTANCE_TYPE_READS = (
    "ec2:DescribeAvailabilityZones",
    "ec2:DescribeCapacityReservations",  # reserved offerings: the reservations' free instances
    "ec2:DescribeImages",
    "ec2:DescribeInstances",
    "ec2:DescribeInstanceTypeOfferings",
    "ec2:DescribeInstanceTypes",
    "ec2:DescribeLaunchTemplates",
    "ec2:DescribePlacementGroups",
    "ec2:DescribeSecurityGroups",
    "ec2:DescribeSpotPriceHistory",
    "ec2:DescribeSubnets",
)

FUNCTIONS: dict[str, FunctionSpec] = {
    spec.name: spec
    for spec in (
        FunctionSpec(
            "provisioner",
            "Schedules pending pods onto new NodeClaims and launches, registers and initializes them",
            memory_mb=1024,
            timeout_seconds=120,
            ec2_reads=_INSTANCE_TYPE_READS,
            capabilities=frozenset(
                {
                    Capability.SSM_PUBLIC_PARAMETERS,
                    Capability.PRICING,
                    Capability.LAUNCH_INSTANCES,
                    Capability.TAG_OWNED_INSTANCES,
                    Capability.READ_INSTANCE_PROFILES,
                    Capability.STATE_TABLE,
                    Capability.ZONAL_SHIFT_STATUS,
                }
            ),
        ),
        FunctionSpec(
            "interruption",
            "Acts on spot interruptions, rebalance recommendations, state changes and AWS Health events",
            memory_mb=512,
            timeout_seconds=20,
            capabilities=frozenset({Capability.STATE_TABLE}),
        ),
        FunctionSpec(
            "disruption",
            "Finds drifted, expired, empty and consolidatable NodeClaims and disrupts them within budgets",
            memory_mb=1024,
            timeout_seconds=240,
            ec2_reads=_INSTANCE_TYPE_READS,
            capabilities=frozenset(
                {
                    Capability.SSM_PUBLIC_PARAMETERS,
                    Capability.PRICING,
                    Capability.STATE_TABLE,
                    Capability.ZONAL_SHIFT_STATUS,
                }
            ),
        ),
        FunctionSpec(
            "termination",
            "Drains and terminates deleted NodeClaims and Nodes, one step per pass",
            memory_mb=512,
            timeout_seconds=60,
            ec2_reads=("ec2:DescribeInstances",),
            capabilities=frozenset({Capability.TERMINATE_INSTANCES, Capability.STATE_TABLE}),
        ),
        FunctionSpec(
            "garbage_collection",
            "Removes instances without NodeClaims, NodeClaims without instances, stale launch templates and profiles",
            memory_mb=512,
            timeout_seconds=60,
            # DescribeLaunchTemplateVersions: which AMI a template launches, to find those no class uses any more.
            ec2_reads=("ec2:DescribeInstances", "ec2:DescribeLaunchTemplates", "ec2:DescribeLaunchTemplateVersions"),
            capabilities=frozenset(
                {
                    Capability.TERMINATE_INSTANCES,
                    Capability.DELETE_LAUNCH_TEMPLATES,
                    Capability.READ_INSTANCE_PROFILES,
                    Capability.DELETE_INSTANCE_PROFILES,
                    Capability.STATE_TABLE,
                }
            ),
        ),
        FunctionSpec(
            "nodeclass",
            "Resolves EC2NodeClass subnets, security groups, AMIs, instance profile and reservations into its status",
            memory_mb=512,
            timeout_seconds=60,
            ec2_reads=(
                "ec2:DescribeAvailabilityZones",
                "ec2:DescribeCapacityReservations",
                "ec2:DescribeImages",
                "ec2:DescribeLaunchTemplates",
                "ec2:DescribePlacementGroups",
                "ec2:DescribeSecurityGroups",
                "ec2:DescribeSubnets",
            ),
            capabilities=frozenset(
                {
                    Capability.SSM_PUBLIC_PARAMETERS,
                    Capability.READ_INSTANCE_PROFILES,
                    Capability.MANAGE_INSTANCE_PROFILES,
                    Capability.DELETE_INSTANCE_PROFILES,
                    Capability.DELETE_LAUNCH_TEMPLATES,
                }
            ),
        ),
        FunctionSpec(
            "conversion",
            "Converts NodePool, NodeClaim and EC2NodeClass objects between v1beta1 and v1 for the API server",
            memory_mb=256,
            timeout_seconds=10,
            kubernetes=False,
        ),
    )
}

assert tuple(FUNCTIONS) == routing.FUNCTIONS, "the catalog lists every function of routing.FUNCTIONS, in its order"
