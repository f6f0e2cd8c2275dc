"""NodePool (karpenter.sh/v1): what nodes may be launched, how they are disrupted, and within what limits."""

from __future__ import annotations

from typing import Annotated, Literal

from croniter import croniter
from pydantic import Field

from autoscaler.apis.rules import INT32, ApiModel, LenientModel, Rule
from autoscaler.apis.v1.common import (
    NILLABLE_DURATION_PATTERN,
    Condition,
    Duration,
    KubeObject,
    NillableDuration,
    NodeClassReference,
    Requirements,
    ResourceList,
    Taint,
    Taints,
    TemplateMetadata,
)

DisruptionReason = Literal["Underutilized", "Empty", "Drifted"]
ConsolidationPolicy = Literal["WhenEmpty", "WhenEmptyOrUnderutilized"]
SCHEDULE_PATTERN = r"^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|((.+)\s(.+)\s(.+)\s(.+)\s(.+))$"
BUDGET_DURATION_PATTERN = r"^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$"
BUDGET_NODES_PATTERN = r"^((100|[0-9]{1,2})%|[0-9]+)$"
_CRON_DESCRIPTORS = {
    "@annually": "0 0 1 1 *",
    "@yearly": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}


def cron_expression(schedule: str) -> str:
    """A budget schedule as a five-field cron expression (descriptors such as @daily expanded)."""
    return _CRON_DESCRIPTORS.get(schedule, schedule)


def _valid_cron(schedule: str) -> bool:
    return bool(croniter.is_valid(cron_expression(schedule)))


# Budget fields, shared with v1beta1's Budget (which has no reasons).
BudgetNodes = Annotated[str, Field(pattern=BUDGET_NODES_PATTERN)]
BudgetSchedule = Annotated[
    str,
    Field(pattern=SCHEDULE_PATTERN),
    Rule("schedule must be a valid cron expression (UTC)", None, _valid_cron),
]
BudgetDuration = Annotated[str, Field(pattern=BUDGET_DURATION_PATTERN)]
SCHEDULE_WITH_DURATION = Rule(
    "'schedule' must be set with 'duration'",
    "self.all(x, has(x.schedule) == has(x.duration))",
    lambda budgets: all((b.schedule is None) == (b.duration is None) for b in budgets),
)


class Budget(ApiModel):
    """How many nodes may be disrupted at once, optionally only for some reasons or in a time window."""

    reasons: list[DisruptionReason] | None = None
    nodes: BudgetNodes = "10%"
    schedule: BudgetSchedule | None = None
    duration: BudgetDuration | None = None


Budgets = Annotated[list[Budget], Field(max_length=50), SCHEDULE_WITH_DURATION]


class Disruption(ApiModel):
    """When and how Karpenter may remove or replace this NodePool's nodes."""

    consolidate_after: NillableDuration = Field(alias="consolidateAfter")
    consolidation_policy: ConsolidationPolicy = Field(default="WhenEmptyOrUnderutilized", alias="consolidationPolicy")
    budgets: Budgets = Field(default_factory=lambda: [Budget()], json_schema_extra={"default": [{"nodes": "10%"}]})


# Karpenter's runtime validation of a template (taints and startupTaints together); v1beta1 shares it.
DISTINCT_TAINTS_ACROSS = Rule(
    "duplicate taint Key/Effect pair across taints and startupTaints",
    None,
    lambda s: (
        len({(t.key, t.effect) for t in [*(s.taints or []), *(s.startup_taints or [])]})
        == len(s.taints or []) + len(s.startup_taints or [])
    ),
)


class NodeClaimTemplateSpec(ApiModel):
    """The NodeClaim every node of the pool starts from."""

    __rules__ = (DISTINCT_TAINTS_ACROSS,)

    taints: Taints | None = None
    startup_taints: Taints | None = Field(default=None, alias="startupTaints")
    requirements: Requirements
    node_class_ref: NodeClassReference = Field(alias="nodeClassRef")
    expire_after: NillableDuration = Field(default="720h", alias="expireAfter")
    termination_grace_period: Duration | None = Field(default=None, alias="terminationGracePeriod")


class NodeClaimTemplate(ApiModel):
    metadata: TemplateMetadata | None = None
    spec: NodeClaimTemplateSpec


def _default_disruption() -> Disruption:
    return Disruption(consolidate_after="0s")


class NodePoolSpec(ApiModel):
    template: NodeClaimTemplate
    disruption: Disruption = Field(
        default_factory=_default_disruption, json_schema_extra={"default": {"consolidateAfter": "0s"}}
    )
    limits: ResourceList | None = None
    weight: Annotated[int, Field(ge=1, le=100), INT32] | None = None


class NodePoolStatus(LenientModel):
    resources: ResourceList | None = None
    conditions: list[Condition] | None = None


class NodePool(KubeObject):
    """karpenter.sh/v1 NodePool."""

    api_version: Literal["karpenter.sh/v1"] = Field(default="karpenter.sh/v1", alias="apiVersion")
    kind: Literal["NodePool"] = "NodePool"
    spec: NodePoolSpec
    status: NodePoolStatus | None = None

    @property
    def all_taints(self) -> list[Taint]:
        spec = self.spec.template.spec
        return [*(spec.taints or []), *(spec.startup_taints or [])]


__all__ = ["NILLABLE_DURATION_PATTERN", "Budget", "Disruption", "NodePool", "NodePoolSpec", "cron_expression"]
