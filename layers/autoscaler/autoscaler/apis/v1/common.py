"""Parts shared by NodePool, NodeClaim and EC2NodeClass: metadata, taints, requirements, quantities."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, Literal, Protocol

from pydantic import Field, WithJsonSchema

from autoscaler.apis.objectref import ObjectRef
from autoscaler.apis.quantity import QUANTITY_PATTERN
from autoscaler.apis.rules import (
    ATOMIC_LIST,
    ATOMIC_MAP,
    DATE_TIME,
    GRANULAR_MAP,
    ApiModel,
    LenientModel,
    Rule,
    Schema,
    TransitionRule,
)
from autoscaler.apis.v1.label_rules import (
    NODECLAIM_REQUIREMENT_KEY_RULES,
    NODEPOOL_REQUIREMENT_KEY_RULES,
    TEMPLATE_LABEL_RULES,
)
from autoscaler.clock import parse_time

# --- Quantities and durations ---------------------------------------------------------------------
Quantity = Annotated[
    int | str,  # pydantic's "smart" union keeps "1000" a string and 1000 a number, as the user wrote it
    WithJsonSchema(
        {
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "x-kubernetes-int-or-string": True,
            "pattern": QUANTITY_PATTERN,
        }
    ),
]


def _is_quantity(value: int | str) -> bool:
    return isinstance(value, int) or bool(re.match(QUANTITY_PATTERN, value))


QUANTITY_RULE = Rule("must be a resource quantity such as 500m, 2 or 4Gi", None, _is_quantity)
ResourceList = dict[str, Annotated[Quantity, QUANTITY_RULE]]

# Go durations as Karpenter's CRDs accept them.
DURATION_PATTERN = r"^([0-9]+(s|m|h))+$"
NILLABLE_DURATION_PATTERN = r"^(([0-9]+(s|m|h))+|Never)$"
Duration = Annotated[str, Field(pattern=DURATION_PATTERN)]
NillableDuration = Annotated[str, Field(pattern=NILLABLE_DURATION_PATTERN)]
Timestamp = Annotated[str, DATE_TIME]

# --- Label keys and values (apimachinery's IsQualifiedName / IsValidLabelValue) -------------------
QUALIFIED_NAME_PATTERN = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\/))?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$"
)
LABEL_VALUE_PATTERN = r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"
_QUALIFIED = re.compile(QUALIFIED_NAME_PATTERN)
_LABEL_VALUE = re.compile(LABEL_VALUE_PATTERN)


def is_qualified_name(key: str) -> bool:
    prefix, slash, name = key.rpartition("/")
    return bool(_QUALIFIED.match(key)) and len(name) <= 63 and (not slash or len(prefix) <= 253)


def is_label_value(value: str) -> bool:
    return len(value) <= 63 and bool(_LABEL_VALUE.match(value))


LabelValue = Annotated[str, Field(max_length=63, pattern=LABEL_VALUE_PATTERN)]
# Karpenter's CRDs put the label-value keywords on the requirement's ``values`` array, where OpenAPI ignores
# them (they constrain strings only): the API server admits any value and runtime validation reports bad ones.
UncheckedLabelValues = Annotated[list[str], Schema({"maxLength": 63, "pattern": LABEL_VALUE_PATTERN}), ATOMIC_LIST]


# --- Metadata -------------------------------------------------------------------------------------
class OwnerReference(LenientModel):
    api_version: str = Field(alias="apiVersion")
    kind: str
    name: str
    uid: str
    controller: bool | None = None
    block_owner_deletion: bool | None = Field(default=None, alias="blockOwnerDeletion")


class ObjectMeta(LenientModel):
    """metav1.ObjectMeta: the fields the autoscaler reads; any other field is kept as it came."""

    name: str | None = None
    generate_name: str | None = Field(default=None, alias="generateName")
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = Field(default=None, alias="resourceVersion")
    generation: int | None = None
    creation_timestamp: str | None = Field(default=None, alias="creationTimestamp")
    deletion_timestamp: str | None = Field(default=None, alias="deletionTimestamp")
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    finalizers: list[str] | None = None
    owner_references: list[OwnerReference] | None = Field(default=None, alias="ownerReferences")


class KubeObject(ApiModel):
    """A top-level object: type meta and object meta. Each kind narrows ``api_version`` and ``kind`` to its
    own and adds its ``spec`` and ``status``."""

    api_version: str = Field(alias="apiVersion")
    kind: str
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)

    @property
    def name(self) -> str:
        return self.metadata.name or ""

    @property
    def ref(self) -> ObjectRef:
        """This object for the Cluster port and events. Karpenter's kinds are cluster-scoped: no namespace."""
        return ObjectRef(self.kind, self.name, uid=self.metadata.uid)

    @property
    def created_at(self) -> datetime | None:
        """``metadata.creationTimestamp``; None when absent or unreadable."""
        return parse_time(self.metadata.creation_timestamp)


class TemplateMetadata(ApiModel):
    """Labels and annotations a NodePool puts on its NodeClaims and Nodes."""

    annotations: Annotated[dict[str, str], GRANULAR_MAP] | None = None
    labels: Annotated[dict[str, LabelValue], Field(max_length=100), ATOMIC_MAP, *TEMPLATE_LABEL_RULES] | None = None


# --- Taints and requirements ----------------------------------------------------------------------
TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class Taint(ApiModel):
    key: Annotated[str, Field(min_length=1, pattern=QUALIFIED_NAME_PATTERN)]
    value: Annotated[str, Field(pattern=QUALIFIED_NAME_PATTERN)] | None = None
    effect: TaintEffect
    time_added: Timestamp | None = Field(default=None, alias="timeAdded")


Taints = Annotated[list[Taint], ATOMIC_LIST]

# Karpenter's CRDs list the operators Kubernetes' enum merged with the two Karpenter added, in this order.
Operator = Literal["Gte", "Lte", "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
NUMERIC_OPERATORS = ("Gt", "Lt", "Gte", "Lte")
_CEL_INTEGER = re.compile(r"[+-]?[0-9]+")


def is_non_negative_integer(text: str) -> bool:
    """CEL's ``int(text) >= 0``: an optionally signed decimal integer that is not negative."""
    return bool(_CEL_INTEGER.fullmatch(text)) and int(text) >= 0


class NodeSelectorRequirementWithMinValues(ApiModel):
    """A node selector requirement, plus the least number of distinct values a launch must offer."""

    key: Annotated[
        str,
        Field(max_length=316, pattern=QUALIFIED_NAME_PATTERN),
        *NODEPOOL_REQUIREMENT_KEY_RULES,
    ]
    operator: Operator
    values: UncheckedLabelValues | None = None
    min_values: Annotated[int, Field(ge=1, le=50)] | None = Field(default=None, alias="minValues")


class _Requirement(Protocol):
    operator: str
    values: list[str] | None


def single_integer_rule(message: str) -> Rule:
    """Gt, Lt, Gte and Lte take one non-negative integer."""

    def holds(requirements: list[_Requirement]) -> bool:
        return all(
            r.operator not in NUMERIC_OPERATORS or (len(r.values or []) == 1 and is_non_negative_integer(r.values[0]))  # type: ignore[index]
            for r in requirements
        )

    return Rule(
        message,
        "self.all(x, (x.operator == 'Gt' || x.operator == 'Lt' || x.operator == 'Gte' || x.operator == 'Lte')"
        " ? (x.values.size() == 1 && int(x.values[0]) >= 0) : true)",
        holds,
    )


def needs_values_rule(operator: str) -> Rule:
    return Rule(
        f"requirements with operator '{operator}' must have a value defined",
        f"self.all(x, x.operator == '{operator}' ? x.values.size() != 0 : true)",
        lambda rs: all(r.operator != operator or r.values for r in rs),
    )


IN_NEEDS_VALUES = needs_values_rule("In")
MIN_VALUES_WITHIN_VALUES = Rule(
    "requirements with 'minValues' must have at least that many values specified in the 'values' field",
    "self.all(x, (x.operator == 'In' && has(x.minValues)) ? x.values.size() >= x.minValues : true)",
    lambda rs: all(r.operator != "In" or r.min_values is None or len(r.values or []) >= r.min_values for r in rs),
)
REQUIREMENT_RULES = (
    IN_NEEDS_VALUES,
    single_integer_rule("requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have a single positive integer value"),
    MIN_VALUES_WITHIN_VALUES,
)
Requirements = Annotated[
    list[NodeSelectorRequirementWithMinValues], Field(max_length=100), ATOMIC_LIST, *REQUIREMENT_RULES
]


class NodeClaimRequirement(NodeSelectorRequirementWithMinValues):
    """A node selector requirement, plus the least number of distinct values a launch must offer."""

    key: Annotated[
        str,
        Field(max_length=316, pattern=QUALIFIED_NAME_PATTERN),
        *NODECLAIM_REQUIREMENT_KEY_RULES,
    ]


NodeClaimRequirements = Annotated[list[NodeClaimRequirement], Field(max_length=100), ATOMIC_LIST, *REQUIREMENT_RULES]


def _not_empty(field: str) -> Rule:
    return Rule(f"{field} may not be empty", "self != ''", bool)


class NodeClassReference(ApiModel):
    """Which node class (group, kind, name) a NodePool's nodes are launched with."""

    group: Annotated[str, Field(pattern=r"^[^/]*$"), _not_empty("group")]
    kind: Annotated[str, _not_empty("kind")]
    name: Annotated[str, _not_empty("name")]


# A NodePool may point at another class of the same kind, not at another kind or group (a NodeClaim's whole spec
# is immutable).
NODECLASS_REF_TRANSITIONS = (
    TransitionRule("nodeClassRef.group is immutable", "self.group == oldSelf.group", lambda a, b: a.group == b.group),
    TransitionRule("nodeClassRef.kind is immutable", "self.kind == oldSelf.kind", lambda a, b: a.kind == b.kind),
)


# --- Conditions -----------------------------------------------------------------------------------
ConditionStatus = Literal["True", "False", "Unknown"]


class Condition(LenientModel):
    """metav1.Condition: the status of one aspect of an object, with when and why it last changed."""

    type: Annotated[str, Field(max_length=316)]
    status: ConditionStatus
    reason: Annotated[str, Field(max_length=1024)] | None = None
    message: Annotated[str, Field(max_length=32768)] | None = None
    last_transition_time: Timestamp = Field(alias="lastTransitionTime")
    observed_generation: Annotated[int, Field(ge=0)] | None = Field(default=None, alias="observedGeneration")


CONDITION_TYPE_PATTERN = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)
CONDITION_REASON_PATTERN = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"


def condition_list_schema(*, nodeclaim: bool = False, list_map: bool = True) -> dict[str, Any]:
    """The CRD schema of a ``status.conditions`` list, as Karpenter serves it: metav1.Condition's rules (reason
    and message required, reason non-empty); a NodeClaim's conditions may leave reason and message out, or the
    reason empty. Reading is more lenient (``Condition``): what a controller wrote is never refused."""
    reason: dict[str, Any] = {"type": "string", "maxLength": 1024}
    if nodeclaim:
        reason["pattern"] = "^([A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?|)$"
    else:
        reason.update(minLength=1, pattern=CONDITION_REASON_PATTERN)
    item = {
        "description": "The state of one aspect of the object: its type, status, and when and why it last changed.",
        "type": "object",
        "properties": {
            "lastTransitionTime": {"type": "string", "format": "date-time"},
            "message": {"type": "string", "maxLength": 32768},
            "observedGeneration": {"type": "integer", "format": "int64", "minimum": 0},
            "reason": reason,
            "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
            "type": {"type": "string", "maxLength": 316, "pattern": CONDITION_TYPE_PATTERN},
        },
        "required": ["lastTransitionTime", "status", "type"]
        if nodeclaim
        else ["lastTransitionTime", "message", "reason", "status", "type"],
    }
    schema: dict[str, Any] = {"type": "array", "items": item}
    if list_map:
        schema.update({"x-kubernetes-list-map-keys": ["type"], "x-kubernetes-list-type": "map"})
    return schema


Conditions = Annotated[list[Condition], WithJsonSchema(condition_list_schema())]
NodeClaimConditions = Annotated[list[Condition], WithJsonSchema(condition_list_schema(nodeclaim=True))]
NodeClassConditions = Annotated[list[Condition], WithJsonSchema(condition_list_schema(list_map=False))]
