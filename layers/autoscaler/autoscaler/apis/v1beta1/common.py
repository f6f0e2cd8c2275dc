"""Parts NodePool and NodeClaim shared in v1beta1: the node class reference and the requirements."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from autoscaler.apis.rules import ApiModel, Rule
from autoscaler.apis.v1 import common as v1

GROUP_VERSION = "karpenter.sh/v1beta1"
AWS_GROUP_VERSION = "karpenter.k8s.aws/v1beta1"

Operator = Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]


class NodeSelectorRequirementWithMinValues(v1.NodeSelectorRequirementWithMinValues):
    """As in v1, without the Gte and Lte operators that v1 added."""

    operator: Operator


def _single_integer(r: NodeSelectorRequirementWithMinValues) -> bool:
    values = r.values or []
    return r.operator not in ("Gt", "Lt") or (len(values) == 1 and values[0].isdigit())


Requirements = Annotated[
    list[NodeSelectorRequirementWithMinValues],
    Field(max_length=100),
    v1.IN_NEEDS_VALUES,
    Rule(
        "requirements operator 'Gt' or 'Lt' must have a single positive integer value",
        "self.all(x, (x.operator == 'Gt' || x.operator == 'Lt') ? "
        "(x.values.size() == 1 && int(x.values[0]) >= 0) : true)",
        lambda rs: all(_single_integer(r) for r in rs),
    ),
    v1.MIN_VALUES_WITHIN_VALUES,
]


class NodeClassReference(ApiModel):
    """v1beta1's reference: only the name is required; ``apiVersion`` became v1's ``group``."""

    kind: str | None = None
    name: str
    api_version: str | None = Field(default=None, alias="apiVersion")


class ResourceRequirements(ApiModel):
    requests: v1.ResourceList | None = None
