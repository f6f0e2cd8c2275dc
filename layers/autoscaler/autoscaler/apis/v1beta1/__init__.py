"""Karpenter's v1beta1 API as v0.37 served it, for conversion to and from v1 (``autoscaler.apis.conversion``).

Nothing reads these models to act on them: v1beta1 objects are converted to v1 first.
"""

from autoscaler.apis.v1beta1.common import AWS_GROUP_VERSION, GROUP_VERSION, NodeClassReference
from autoscaler.apis.v1beta1.ec2nodeclass import EC2NodeClass, EC2NodeClassSpec
from autoscaler.apis.v1beta1.nodeclaim import NodeClaim, NodeClaimSpec
from autoscaler.apis.v1beta1.nodepool import NodePool, NodePoolSpec

__all__ = [
    "AWS_GROUP_VERSION",
    "GROUP_VERSION",
    "EC2NodeClass",
    "EC2NodeClassSpec",
    "NodeClaim",
    "NodeClaimSpec",
    "NodeClassReference",
    "NodePool",
    "NodePoolSpec",
]
