"""NodeClaim (karpenter.sh/v1): one requested node, from launch to termination."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from autoscaler.apis.rules import ApiModel, LenientModel, TransitionRule
from autoscaler.apis.v1.common import (
    Duration,
    KubeObject,
    NillableDuration,
    NodeClaimConditions,
    NodeClaimRequirements,
    NodeClassReference,
    ResourceList,
    Taints,
    Timestamp,
)
from autoscaler.apis.v1.conditions import is_true

# The lifecycle's conditions, in the order a NodeClaim reaches them (each rolls up into Ready).
LAUNCHED = "Launched"
REGISTERED = "Registered"
INITIALIZED = "Initialized"


class ResourceRequirements(ApiModel):
    requests: ResourceList | None = None


class NodeClaimSpec(ApiModel):
    """What the node must be; immutable once created (a change is a new NodeClaim)."""

    __transition_rules__ = (TransitionRule("spec is immutable", "self == oldSelf", lambda old, new: old == new),)

    taints: Taints | None = None
    startup_taints: Taints | None = Field(default=None, alias="startupTaints")
    requirements: NodeClaimRequirements
    resources: ResourceRequirements | None = None
    node_class_ref: NodeClassReference = Field(alias="nodeClassRef")
    termination_grace_period: Duration | None = Field(default=None, alias="terminationGracePeriod")
    expire_after: NillableDuration = Field(default="720h", alias="expireAfter")


class NodeClaimStatus(LenientModel):
    node_name: str | None = Field(default=None, alias="nodeName")
    provider_id: str | None = Field(default=None, alias="providerID")
    image_id: str | None = Field(default=None, alias="imageID")
    capacity: ResourceList | None = None
    allocatable: ResourceList | None = None
    conditions: NodeClaimConditions | None = None
    last_pod_event_time: Timestamp | None = Field(default=None, alias="lastPodEventTime")


class NodeClaim(KubeObject):
    """karpenter.sh/v1 NodeClaim."""

    api_version: Literal["karpenter.sh/v1"] = Field(default="karpenter.sh/v1", alias="apiVersion")
    kind: Literal["NodeClaim"] = "NodeClaim"
    spec: NodeClaimSpec
    status: NodeClaimStatus | None = None

    @property
    def initialized(self) -> bool:
        """``Initialized=True``: its node registered and is ready for pods."""
        return is_true(self.status.conditions if self.status else None, INITIALIZED)
