"""Karpenter's v1 API: ``karpenter.sh/v1`` NodePool and NodeClaim, ``karpenter.k8s.aws/v1`` EC2NodeClass."""

from autoscaler.apis.v1.common import (
    Condition,
    NodeClassReference,
    NodeSelectorRequirementWithMinValues,
    Taint,
)
from autoscaler.apis.v1.ec2nodeclass import EC2NodeClass, EC2NodeClassSpec
from autoscaler.apis.v1.kubelet import KubeletConfiguration
from autoscaler.apis.v1.nodeclaim import NodeClaim, NodeClaimSpec
from autoscaler.apis.v1.nodepool import NodePool, NodePoolSpec

__all__ = [
    "Condition",
    "EC2NodeClass",
    "EC2NodeClassSpec",
    "KubeletConfiguration",
    "NodeClaim",
    "NodeClaimSpec",
    "NodeClassReference",
    "NodePool",
    "NodePoolSpec",
    "NodeSelectorRequirementWithMinValues",
    "Taint",
]
