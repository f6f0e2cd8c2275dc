"""NodePool (karpenter.sh/v1beta1) as Karpenter v0.37 served it: kubelet in the template, expireAfter under
disruption, ``WhenUnderutilized`` consolidation, budgets without reasons."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field

from autoscaler.apis.rules import INT32, ApiModel, LenientModel, Rule
from autoscaler.apis.v1.common import KubeObject, NillableDuration, ResourceList, Taints, TemplateMetadata
from autoscaler.apis.v1.kubelet import KubeletConfiguration
from autoscaler.apis.v1.nodepool import (
    SCHEDULE_WITH_DURATION,
    BudgetDuration,
    BudgetNodes,
    BudgetSchedule,
)
from autoscaler.apis.v1beta1.common import NodeClassReference, Requirements

ConsolidationPolicy = Literal["WhenEmpty", "WhenUnderutilized"]
NEVER = "Never"


class Budget(ApiModel):
    """How many nodes may be disrupted at once, optionally in a time window (v1 added reasons)."""

    nodes: BudgetNodes = "10%"
    schedule: BudgetSchedule | None = None
    duration: BudgetDuration | None = None


class Disruption(ApiModel):
    __rules__ = (
        Rule(
            "consolidateAfter cannot be combined with consolidationPolicy=WhenUnderutilized",
            "has(self.consolidateAfter) ? self.consolidationPolicy != 'WhenUnderutilized' || "
            "self.consolidateAfter == 'Never' : true",
            lambda d: (
                d.consolidate_after is None
                or d.consolidation_policy != "WhenUnderutilized"
                or d.consolidate_after == NEVER
            ),
        ),
        Rule(
            "consolidateAfter must be specified with consolidationPolicy=WhenEmpty",
            "self.consolidationPolicy == 'WhenEmpty' ? has(self.consolidateAfter) : true",
            lambda d: d.consolidation_policy != "WhenEmpty" or d.consolidate_after is not None,
        ),
    )

    consolidate_after: NillableDuration | None = Field(default=None, alias="consolidateAfter")
    consolidation_policy: ConsolidationPolicy = Field(default="WhenUnderutilized", alias="consolidationPolicy")
    expire_after: NillableDuration = Field(default="720h", alias="expireAfter")
    budgets: Annotated[list[Budget], Field(max_length=50), SCHEDULE_WITH_DURATION] = Field(
        default_factory=lambda: [Budget()], json_schema_extra={"default": [{"nodes": "10%"}]}
    )


class TemplateResources(ApiModel):
    """v1beta1 let a template carry ``resources``, but only empty (the CRD's maxProperties 0)."""

    model_config = ConfigDict(json_schema_extra={"maxProperties": 0})


class NodeClaimTemplateSpec(ApiModel):
    taints: Taints | None = None
    startup_taints: Taints | None = Field(default=None, alias="startupTaints")
    requirements: Requirements
    resources: TemplateResources | None = None
    kubelet: KubeletConfiguration | None = None
    node_class_ref: NodeClassReference = Field(alias="nodeClassRef")


class NodeClaimTemplate(ApiModel):
    metadata: TemplateMetadata | None = None
    spec: NodeClaimTemplateSpec


def _default_disruption() -> Disruption:
    return Disruption()


class NodePoolSpec(ApiModel):
    template: NodeClaimTemplate
    disruption: Disruption = Field(
        default_factory=_default_disruption,
        json_schema_extra={"default": {"consolidationPolicy": "WhenUnderutilized", "expireAfter": "720h"}},
    )
    limits: ResourceList | None = None
    weight: Annotated[int, Field(ge=1, le=100), INT32] | None = None


class NodePoolStatus(LenientModel):
    resources: ResourceList | None = None


class NodePool(KubeObject):
    """karpenter.sh/v1beta1 NodePool."""

    api_version: Literal["karpenter.sh/v1beta1"] = Field(default="karpenter.sh/v1beta1", alias="apiVersion")
    kind: Literal["NodePool"] = "NodePool"
    spec: NodePoolSpec
    status: NodePoolStatus | None = None
