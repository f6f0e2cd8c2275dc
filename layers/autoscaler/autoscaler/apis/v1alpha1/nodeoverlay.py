"""NodeOverlay (karpenter.sh/v1alpha1): adjust what the scheduler believes about matching instance types — their
price (replaced, or shifted by an amount or a percentage) and extra extended resources.

Served and validated as Karpenter v1.14.1 serves it (behind its NodeOverlay feature gate); nothing here applies
overlays yet.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from autoscaler.apis.rules import ATOMIC_LIST, INT32, ApiModel, LenientModel, Rule, has
from autoscaler.apis.v1.common import (
    IN_NEEDS_VALUES,
    QUALIFIED_NAME_PATTERN,
    Conditions,
    KubeObject,
    Operator,
    ResourceList,
    UncheckedLabelValues,
    needs_values_rule,
    single_integer_rule,
)
from autoscaler.apis.v1.label_rules import OVERLAY_REQUIREMENT_KEY_RULES
from autoscaler.apis.v1.runtime_validation import NODEOVERLAY_SPEC_RULES

PRICE_PATTERN = r"^\d+(\.\d+)?$"
# A signed amount (-0.5, +1.2), an increase in percent (+10%), or a decrease of at most 100% (-15%).
PRICE_ADJUSTMENT_PATTERN = r"^(([+-]{1}(\d*\.?\d+))|(\+{1}\d*\.?\d+%)|(^(-\d{1,2}(\.\d+)?%)$)|(-100%))$"
_NODE_RESOURCES = ("cpu", "memory", "ephemeral-storage", "pods")


class NodeSelectorRequirement(ApiModel):
    """Which instance types (by label) the overlay applies to."""

    key: Annotated[str, Field(max_length=316, pattern=QUALIFIED_NAME_PATTERN), *OVERLAY_REQUIREMENT_KEY_RULES]
    operator: Operator
    values: UncheckedLabelValues | None = None


OverlayRequirements = Annotated[
    list[NodeSelectorRequirement],
    Field(max_length=100),
    ATOMIC_LIST,
    needs_values_rule("NotIn"),
    IN_NEEDS_VALUES,
    single_integer_rule("requirements operator 'Gt', 'Lt', 'Gte' or 'Lte' must have a single positive integer value"),
]
ExtendedResources = Annotated[
    ResourceList,
    Rule(
        "invalid resource restricted",
        "self.all(x, !(x in ['cpu', 'memory', 'ephemeral-storage', 'pods']))",
        lambda capacity: not any(name in _NODE_RESOURCES for name in capacity),
    ),
]


class NodeOverlaySpec(ApiModel):
    """The higher ``weight`` wins where overlays overlap; equal weights merge in name order."""

    __rules__ = (
        Rule(
            "cannot set both 'price' and 'priceAdjustment'",
            "!has(self.price) || !has(self.priceAdjustment)",
            lambda spec: not (has(spec.price) and has(spec.price_adjustment)),
        ),
    )
    __runtime_rules__ = NODEOVERLAY_SPEC_RULES

    requirements: OverlayRequirements
    price_adjustment: Annotated[str, Field(pattern=PRICE_ADJUSTMENT_PATTERN)] | None = Field(
        default=None, alias="priceAdjustment"
    )
    price: Annotated[str, Field(pattern=PRICE_PATTERN)] | None = None
    capacity: ExtendedResources | None = None
    weight: Annotated[int, Field(ge=1, le=10000), INT32] | None = None


class NodeOverlayStatus(LenientModel):
    conditions: Conditions | None = None


class NodeOverlay(KubeObject):
    """karpenter.sh/v1alpha1 NodeOverlay."""

    api_version: Literal["karpenter.sh/v1alpha1"] = Field(default="karpenter.sh/v1alpha1", alias="apiVersion")
    kind: Literal["NodeOverlay"] = "NodeOverlay"
    spec: NodeOverlaySpec
    status: NodeOverlayStatus | None = None
