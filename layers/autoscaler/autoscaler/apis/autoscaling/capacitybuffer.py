"""CapacityBuffer (autoscaling.x-k8s.io/v1beta1, namespaced): spare capacity to keep provisioned ahead of demand,
as chunks shaped like a PodTemplate's pod or like a scalable workload's pods.

Served and validated as Karpenter v1.14.1 serves it (behind its CapacityBuffer feature gate). The provisioner keeps
buffers provisioned as virtual pods (``controllers/buffers``); the names below are the ones Karpenter gives them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import Field

from autoscaler.apis.rules import INT32, INT64, ApiModel, LenientModel, Rule, has
from autoscaler.apis.v1.common import Conditions, KubeObject, ResourceList

GROUP = "autoscaling.x-k8s.io"
API_VERSION = f"{GROUP}/v1beta1"
ACTIVE_CAPACITY = "buffer.x-k8s.io/active-capacity"
NonEmpty = Annotated[str, Field(min_length=1)]

# Status conditions (the API owner's, cluster-autoscaler/capacitybuffer): the template resolved, capacity kept.
READY_FOR_PROVISIONING = "ReadyForProvisioning"
PROVISIONING = "Provisioning"
# The workload kinds a scalableRef may name (group apps, which an empty apiGroup means, as in Karpenter).
SCALABLE_KINDS = frozenset({"Deployment", "StatefulSet", "ReplicaSet"})
# A virtual pod: never created in the cluster, it stands for one chunk of a buffer in the scheduling simulation.
VIRTUAL_POD_ANNOTATION = "karpenter.sh/capacity-buffer-fake-pod"
BUFFER_NAME_ANNOTATION = "karpenter.sh/capacity-buffer-name"
BUFFER_NAMESPACE_ANNOTATION = "karpenter.sh/capacity-buffer-namespace"
VIRTUAL_POD_PRIORITY = -(2**31)  # the lowest priority there is: any real pod matters more


def is_virtual_pod(pod: Mapping[str, Any]) -> bool:
    """Whether ``pod`` (Kubernetes JSON) is a buffer's virtual pod."""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    return bool(annotations.get(VIRTUAL_POD_ANNOTATION) == "true")


class LocalObjectRef(ApiModel):
    """An object in the buffer's namespace, by name."""

    name: NonEmpty


class ScalableRef(ApiModel):
    """A workload with a scale subresource (a Deployment, StatefulSet or ReplicaSet); an empty apiGroup means apps,
    as Karpenter reads it."""

    api_group: str | None = Field(default=None, alias="apiGroup")
    kind: NonEmpty
    name: NonEmpty


class CapacityBufferSpec(ApiModel):
    """Chunks: the larger of ``replicas`` and ``percentage`` of the scalable workload's replicas (rounded up, at
    least one), capped by as many as ``limits`` allow (alone, ``limits`` says how many)."""

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
