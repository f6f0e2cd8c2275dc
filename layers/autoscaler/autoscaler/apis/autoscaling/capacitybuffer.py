"""CapacityBuffer (autoscaling.x-k8s.io/v1beta1, namespaced): spare capacity to keep provisioned ahead of demand,
as chunks shaped like a PodTemplate's pod or like a scalable workload's pods.

Served and validated as Karpenter v1.14.1 serves it (behind its CapacityBuffer feature gate); nothing here
provisions buffers yet.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from autoscaler.apis.rules import INT32, INT64, ApiModel, LenientModel, Rule, has
from autoscaler.apis.v1.common import Conditions, KubeObject, ResourceList

GROUP = "autoscaling.x-k8s.io"
API_VERSION = f"{GROUP}/v1beta1"
ACTIVE_CAPACITY = "buffer.x-k8s.io/active-capacity"
NonEmpty = Annotated[str, Field(min_length=1)]


class LocalObjectRef(ApiModel):
    """An object in the buffer's namespace, by name."""

    name: NonEmpty


class ScalableRef(ApiModel):
    """A workload with a scale subresource (a Deployment, StatefulSet or ReplicaSet); empty apiGroup is core."""

    api_group: str | None = Field(default=None, alias="apiGroup")
    kind: NonEmpty
    name: NonEmpty


class CapacityBufferSpec(ApiModel):
    """Chunks: ``replicas`` of them, ``percentage`` of the scalable workload's replicas (rounded up, at least
    one), or as many as ``limits`` allow; with several, the least."""

    __rules__ = (
        Rule(
            "If podTemplateRef is set, replicas or limits must also be set",
            "!has(self.podTemplateRef) || has(self.replicas) || has(self.limits)",
            lambda s: s.pod_template_ref is None or has(s.replicas) or has(s.limits),
        ),
        Rule(
            "You must define either PodTemplateRef or ScalableRef, but not both",
            "!(has(self.podTemplateRef) && has(self.scalableRef))",
            lambda s: not (has(s.pod_template_ref) and has(s.scalable_ref)),
        ),
    )

    provisioning_strategy: str = Field(default=ACTIVE_CAPACITY, alias="provisioningStrategy")
    pod_template_ref: LocalObjectRef | None = Field(default=None, alias="podTemplateRef")
    scalable_ref: ScalableRef | None = Field(default=None, alias="scalableRef")
    replicas: Annotated[int, Field(ge=0), INT32] | None = None
    percentage: Annotated[int, Field(ge=0), INT32] | None = None
    limits: ResourceList | None = None


class CapacityBufferStatus(LenientModel):
    pod_template_ref: LocalObjectRef | None = Field(default=None, alias="podTemplateRef")
    replicas: Annotated[int, INT32] | None = None
    pod_template_generation: Annotated[int, INT64] | None = Field(default=None, alias="podTemplateGeneration")
    conditions: Conditions | None = None
    provisioning_strategy: str | None = Field(default=None, alias="provisioningStrategy")


class CapacityBuffer(KubeObject):
    """autoscaling.x-k8s.io/v1beta1 CapacityBuffer."""

    api_version: Literal["autoscaling.x-k8s.io/v1beta1"] = Field(
        default="autoscaling.x-k8s.io/v1beta1", alias="apiVersion"
    )
    kind: Literal["CapacityBuffer"] = "CapacityBuffer"
    spec: CapacityBufferSpec
    status: CapacityBufferStatus | None = None
