"""NodePool (karpenter.sh/v1): what nodes may be launched, how they are disrupted, and within what limits."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from croniter import croniter
from pydantic import ConfigDict, Field

from autoscaler.apis.rules import (
    ATOMIC_LIST,
    INT32,
    INT64,
    SET_LIST,
    ApiModel,
    LenientModel,
    Rule,
    TransitionRule,
    has,
)
from autoscaler.apis.v1.common import (
    NILLABLE_DURATION_PATTERN,
    NODECLASS_REF_TRANSITIONS,
    Conditions,
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
from autoscaler.apis.v1.runtime_validation import NODEPOOL_TEMPLATE_RULES

DisruptionReason = Literal["Underutilized", "Empty", "Drifted"]
# Balanced (v1.14): consolidate only moves whose savings outweigh the disruption; nothing here acts on it yet.
ConsolidationPolicy = Literal["WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"]
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


def _nodes_required(schema: dict[str, Any]) -> None:
    schema["required"] = ["nodes"]  # Karpenter's CRD both defaults and requires it: the default always fills it


class Budget(ApiModel):
    """How many nodes may be disrupted at once, optionally only for some reasons or in a time window."""

    model_config = ConfigDict(json_schema_extra=_nodes_required)

    reasons: Annotated[list[DisruptionReason], Field(max_length=50), SET_LIST] | None = None
    nodes: BudgetNodes = "10%"
    schedule: BudgetSchedule | None = None
    duration: BudgetDuration | None = None


Budgets = Annotated[list[Budget], Field(max_length=50), ATOMIC_LIST, SCHEDULE_WITH_DURATION]


class Disruption(ApiModel):
    """When and how Karpenter may remove or replace this NodePool's nodes."""

    consolidate_after: NillableDuration = Field(alias="consolidateAfter")
    consolidation_policy: ConsolidationPolicy = Field(default="WhenEmptyOrUnderutilized", alias="consolidationPolicy")
    budgets: Budgets = Field(default_factory=lambda: [Budget()], json_schema_extra={"default": [{"nodes": "10%"}]})


class NodeClaimTemplateSpec(ApiModel):
    """The NodeClaim every node of the pool starts from."""

    taints: Taints | None = None
    startup_taints: Taints | None = Field(default=None, alias="startupTaints")
    requirements: Requirements
    node_class_ref: Annotated[NodeClassReference, *NODECLASS_REF_TRANSITIONS] = Field(alias="nodeClassRef")
    expire_after: NillableDuration = Field(default="720h", alias="expireAfter")
    termination_grace_period: Duration | None = Field(default=None, alias="terminationGracePeriod")


class NodeClaimTemplate(ApiModel):
    __runtime_rules__ = NODEPOOL_TEMPLATE_RULES

    metadata: TemplateMetadata | None = None
    spec: NodeClaimTemplateSpec


def _default_disruption() -> Disruption:
    return Disruption(consolidate_after="0s")


def _only_node_limits(spec: NodePoolSpec) -> bool:
    return spec.replicas is None or not spec.limits or set(spec.limits) == {"nodes"}


class NodePoolSpec(ApiModel):
    """A static NodePool (``replicas`` set) keeps that many nodes whatever the pods need."""

    __transition_rules__ = (
        TransitionRule(
            "Cannot transition NodePool between static (replicas set) and dynamic (replicas unset) provisioning modes",
            "has(self.replicas) == has(oldSelf.replicas)",
            lambda old, new: has(old.replicas) == has(new.replicas),
        ),
    )
    __rules__ = (
        Rule(
            "only 'limits.nodes' is supported on static NodePools",
            "!has(self.replicas) || (!has(self.limits) || size(self.limits) == 0 || "
            "(size(self.limits) == 1 && 'nodes' in self.limits))",
            _only_node_limits,
        ),
        Rule(
            "'weight' is not supported on static NodePools",
            "!has(self.replicas) || !has(self.weight)",
            lambda spec: spec.replicas is None or spec.weight is None,
        ),
    )

    template: NodeClaimTemplate
    disruption: Disruption = Field(
        default_factory=_default_disruption, json_schema_extra={"default": {"consolidateAfter": "0s"}}
    )
    limits: ResourceList | None = None
    weight: Annotated[int, Field(ge=1, le=100), INT32] | None = None
    replicas: Annotated[int, Field(ge=0), INT64] | None = None


class NodePoolStatus(LenientModel):
    resources: ResourceList | None = None
    # The pool's node count (the scale subresource's status replicas). The API server defaults it to 0; read as
    # written, so that a status carried through conversion is not rewritten.
    nodes: Annotated[int, INT64] | None = Field(default=None, json_schema_extra={"default": 0})
    node_class_observed_generation: Annotated[int, INT64] | None = Field(
        default=None, alias="nodeClassObservedGeneration"
    )
    conditions: Conditions | None = None


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
