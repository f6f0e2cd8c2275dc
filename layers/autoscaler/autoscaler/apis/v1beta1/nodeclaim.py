"""NodeClaim (karpenter.sh/v1beta1) as Karpenter v0.37 served it: kubelet in the spec, no expireAfter."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from autoscaler.apis.rules import ApiModel, LenientModel
from autoscaler.apis.v1.common import Condition, KubeObject, ResourceList, Taints
from autoscaler.apis.v1.kubelet import KubeletConfiguration
from autoscaler.apis.v1beta1.common import NodeClassReference, Requirements, ResourceRequirements


class NodeClaimSpec(ApiModel):
    taints: Taints | None = None
    startup_taints: Taints | None = Field(default=None, alias="startupTaints")
    requirements: Requirements
    resources: ResourceRequirements | None = None
    kubelet: KubeletConfiguration | None = None
    node_class_ref: NodeClassReference = Field(alias="nodeClassRef")


class NodeClaimStatus(LenientModel):
    node_name: str | None = Field(default=None, alias="nodeName")
    provider_id: str | None = Field(default=None, alias="providerID")
    image_id: str | None = Field(default=None, alias="imageID")
    capacity: ResourceList | None = None
    allocatable: ResourceList | None = None
    conditions: list[Condition] | None = None


class NodeClaim(KubeObject):
    """karpenter.sh/v1beta1 NodeClaim."""

    api_version: Literal["karpenter.sh/v1beta1"] = Field(default="karpenter.sh/v1beta1", alias="apiVersion")
    kind: Literal["NodeClaim"] = "NodeClaim"
    spec: NodeClaimSpec
    status: NodeClaimStatus | None = None
