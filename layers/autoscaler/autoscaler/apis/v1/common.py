"""Parts shared by NodePool, NodeClaim and EC2NodeClass: metadata, taints, requirements, quantities."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Field, WithJsonSchema

from autoscaler.apis.objectref import ObjectRef
from autoscaler.apis.quantity import QUANTITY_PATTERN
from autoscaler.apis.rules import ATOMIC_LIST, DATE_TIME, ApiModel, LenientModel, Rule
from autoscaler.apis.v1 import labels as wk
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
NILLABLE_DURATION_PATTERN = r"^(([0-9]+(s|m|h))+)|(Never)$"
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


def _domain_rules(
    allowed_kubernetes_io: tuple[str, ...],
    subject: str,
    *,
    nodepool_restricted: bool = True,
    aws_allowed: tuple[str, ...] = wk.AWS_INSTANCE_LABELS,
) -> tuple[Rule, ...]:
    """The label-domain rules of Karpenter's CRDs, over one key (``subject`` = "self") or all keys. A NodeClaim's
    requirements may also name the NodePool and EC2NodeClass labels (``nodepool_restricted``, ``aws_allowed``)."""

    def every(check: Any) -> Any:
        return check if subject == "self" else (lambda keys: all(check(k) for k in keys))

    def cel(expr: str) -> str:
        return expr.replace("KEY", "self") if subject == "self" else f"self.all(x, {expr.replace('KEY', 'x')})"

    domain = wk.label_domain
    k8s_allowed = ", ".join(f'"{k}"' for k in allowed_kubernetes_io)
    aws_listed = ", ".join(f'"{k}"' for k in aws_allowed)
    find = 'KEY.find("^([^/]+)")'
    return (
        Rule(
            'label domain "kubernetes.io" is restricted',
            cel(
                f'KEY in [{k8s_allowed}] || {find}.endsWith("node.kubernetes.io") || '
                f'{find}.endsWith("node-restriction.kubernetes.io") || !{find}.endsWith("kubernetes.io")'
            ),
            every(
                lambda k: (
                    k in allowed_kubernetes_io
                    or domain(k).endswith(("node.kubernetes.io", "node-restriction.kubernetes.io"))
                    or not domain(k).endswith("kubernetes.io")
                )
            ),
        ),
        Rule(
            'label domain "k8s.io" is restricted',
            cel(f'{find}.endsWith("kops.k8s.io") || !{find}.endsWith("k8s.io")'),
            every(lambda k: domain(k).endswith("kops.k8s.io") or not domain(k).endswith("k8s.io")),
        ),
        Rule(
            'label domain "karpenter.sh" is restricted',
            cel(f'KEY in ["{wk.LABEL_CAPACITY_TYPE}", "{wk.LABEL_NODEPOOL}"] || !{find}.endsWith("karpenter.sh")'),
            every(lambda k: k in (wk.LABEL_CAPACITY_TYPE, wk.LABEL_NODEPOOL) or not domain(k).endswith("karpenter.sh")),
        ),
        *(
            [
                Rule(
                    'label "karpenter.sh/nodepool" is restricted',
                    cel(f'KEY != "{wk.LABEL_NODEPOOL}"'),
                    every(lambda k: k != wk.LABEL_NODEPOOL),
                )
            ]
            if nodepool_restricted
            else []
        ),
        Rule(
            'label "kubernetes.io/hostname" is restricted',
            cel(f'KEY != "{wk.LABEL_HOSTNAME}"'),
            every(lambda k: k != wk.LABEL_HOSTNAME),
        ),
        Rule(
            'label domain "karpenter.k8s.aws" is restricted',
            cel(f'KEY in [{aws_listed}] || !{find}.endsWith("karpenter.k8s.aws")'),
            every(lambda k: k in aws_allowed or not domain(k).endswith("karpenter.k8s.aws")),
        ),
    )


_KUBERNETES_IO_LABELS = (
    "beta.kubernetes.io/instance-type",
    "failure-domain.beta.kubernetes.io/region",
    "beta.kubernetes.io/os",
    "beta.kubernetes.io/arch",
    "failure-domain.beta.kubernetes.io/zone",
    wk.LABEL_ZONE,
    wk.LABEL_REGION,
)
_REQUIREMENT_KUBERNETES_IO = (
    *_KUBERNETES_IO_LABELS,
    wk.LABEL_INSTANCE_TYPE,
    wk.LABEL_ARCH,
    wk.LABEL_OS,
    wk.LABEL_WINDOWS_BUILD,
)
REQUIREMENT_KEY_RULES = _domain_rules(_REQUIREMENT_KUBERNETES_IO, "self")
# A NodeClaim may require its own NodePool's and EC2NodeClass's labels (Karpenter's scheduler writes them into
# NodeClaim requirements); Karpenter's NodeClaim CRD allows them, its NodePool CRD does not.
NODECLAIM_REQUIREMENT_KEY_RULES = _domain_rules(
    _REQUIREMENT_KUBERNETES_IO,
    "self",
    nodepool_restricted=False,
    aws_allowed=(wk.LABEL_NODECLASS, wk.LABEL_INSTANCE_CPU_SUSTAINED_CLOCK_SPEED, *wk.AWS_INSTANCE_LABELS),
)
TEMPLATE_LABEL_RULES = _domain_rules(
    (*_KUBERNETES_IO_LABELS, wk.LABEL_ARCH, wk.LABEL_OS, wk.LABEL_WINDOWS_BUILD), "keys"
)


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

    annotations: dict[str, str] | None = None
    labels: Annotated[
        dict[str, LabelValue] | None,
        Field(max_length=100),
        *TEMPLATE_LABEL_RULES,
        Rule(
            "label keys must be qualified names (an optional DNS prefix, '/', and at most 63 characters)",
            None,
            lambda labels: all(is_qualified_name(k) for k in labels),
        ),
    ] = None


# --- Taints and requirements ----------------------------------------------------------------------
TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class Taint(ApiModel):
    key: Annotated[str, Field(min_length=1, pattern=QUALIFIED_NAME_PATTERN)]
    value: Annotated[str, Field(pattern=QUALIFIED_NAME_PATTERN)] | None = None
    effect: TaintEffect
    time_added: Timestamp | None = Field(default=None, alias="timeAdded")


def _no_duplicate_taints(taints: list[Taint]) -> bool:
    pairs = [(t.key, t.effect) for t in taints]
    return len(pairs) == len(set(pairs))


NO_DUPLICATE_TAINTS = Rule("duplicate taint Key/Effect pair", None, _no_duplicate_taints)
Taints = Annotated[list[Taint], NO_DUPLICATE_TAINTS]

Operator = Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"]
NUMERIC_OPERATORS = ("Gt", "Lt", "Gte", "Lte")


class NodeSelectorRequirementWithMinValues(ApiModel):
    """A node selector requirement, plus the least number of distinct values a launch must offer."""

    key: Annotated[
        str,
        Field(max_length=316, pattern=QUALIFIED_NAME_PATTERN),
        *REQUIREMENT_KEY_RULES,
    ]
    operator: Operator
    values: Annotated[list[LabelValue], ATOMIC_LIST] | None = None
    min_values: Annotated[int, Field(ge=1, le=50)] | None = Field(default=None, alias="minValues")


def _numeric_value_ok(r: NodeSelectorRequirementWithMinValues) -> bool:
    if r.operator not in NUMERIC_OPERATORS:
        return True
    values = r.values or []
    return len(values) == 1 and values[0].isdigit()


IN_NEEDS_VALUES = Rule(
    "requirements with operator 'In' must have a value defined",
    "self.all(x, x.operator == 'In' ? x.values.size() != 0 : true)",
    lambda rs: all(r.operator != "In" or r.values for r in rs),
)
MIN_VALUES_WITHIN_VALUES = Rule(
    "requirements with 'minValues' must have at least that many values specified in the 'values' field",
    "self.all(x, (x.operator == 'In' && has(x.minValues)) ? x.values.size() >= x.minValues : true)",
    lambda rs: all(r.operator != "In" or r.min_values is None or len(r.values or []) >= r.min_values for r in rs),
)
REQUIREMENT_RULES = (
    IN_NEEDS_VALUES,
    Rule(
        "requirements operator 'Gt', 'Lt', 'Gte' or 'Lte' must have a single positive integer value",
        "self.all(x, (x.operator == 'Gt' || x.operator == 'Lt' || x.operator == 'Gte' || x.operator == 'Lte')"
        " ? (x.values.size() == 1 && int(x.values[0]) >= 0) : true)",
        lambda rs: all(_numeric_value_ok(r) for r in rs),
    ),
    MIN_VALUES_WITHIN_VALUES,
)
Requirements = Annotated[list[NodeSelectorRequirementWithMinValues], Field(max_length=100), *REQUIREMENT_RULES]


class NodeClaimRequirement(NodeSelectorRequirementWithMinValues):
    """A node selector requirement, plus the least number of distinct values a launch must offer."""

    key: Annotated[
        str,
        Field(max_length=316, pattern=QUALIFIED_NAME_PATTERN),
        *NODECLAIM_REQUIREMENT_KEY_RULES,
    ]


NodeClaimRequirements = Annotated[list[NodeClaimRequirement], Field(max_length=100), *REQUIREMENT_RULES]


class NodeClassReference(ApiModel):
    """Which node class (group, kind, name) a NodePool's nodes are launched with."""

    group: Annotated[str, Field(pattern=r"^[^/]*$")]
    kind: str
    name: str


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
