"""Build apiextensions.k8s.io/v1 CRDs from the pydantic models.

The OpenAPI schema is pydantic's JSON schema made structural, as the API server requires: references
inlined, ``Optional`` unwrapped, titles dropped. CEL rules come from the models' :class:`Rule` metadata,
so the API server enforces what our Python validation enforces.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from autoscaler.apis.autoscaling import CapacityBuffer
from autoscaler.apis.rules import VALIDATIONS, ApiModel
from autoscaler.apis.v1.ec2nodeclass import EC2NodeClass
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.apis.v1.nodepool import NodePool
from autoscaler.apis.v1alpha1 import NodeOverlay


def _condition_status(condition: str) -> str:
    return f'.status.conditions[?(@.type=="{condition}")].status'


def _column(name: str, json_path: str, column_type: str = "string", priority: int = 0) -> dict[str, Any]:
    column: dict[str, Any] = {"name": name, "type": column_type, "jsonPath": json_path}
    return {**column, "priority": priority} if priority else column


def _label_column(name: str, escaped_label: str, priority: int = 0) -> dict[str, Any]:
    return _column(name, f".metadata.labels.{escaped_label}", priority=priority)


_READY = _column("Ready", _condition_status("Ready"))
_AGE = _column("Age", ".metadata.creationTimestamp", "date")


@dataclass(frozen=True)
class CRDKind:
    """How one kind is served: names, scope, version, the columns ``kubectl get`` prints and its subresources.

    ``converted``: a v1beta1 version exists, served through the conversion webhook on request."""

    model: type[ApiModel]
    group: str
    kind: str
    plural: str
    short_names: tuple[str, ...] = ()
    printer_columns: tuple[dict[str, Any], ...] = field(default_factory=tuple)
    version: str = "v1"
    scope: str = "Cluster"
    categories: tuple[str, ...] = ("karpenter",)
    scale: dict[str, str] | None = None
    spec_required: bool = True
    converted: bool = False

    @property
    def name(self) -> str:
        return f"{self.plural}.{self.group}"

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"


CRD_KINDS = (
    CRDKind(
        EC2NodeClass,
        "karpenter.k8s.aws",
        "EC2NodeClass",
        "ec2nodeclasses",
        ("ec2nc", "ec2ncs"),
        (_READY, _AGE, _column("Role", ".spec.role", priority=1)),
        spec_required=False,  # Karpenter's CRD does not require it; our model does (see docs/api.md)
        converted=True,
    ),
    CRDKind(
        NodePool,
        "karpenter.sh",
        "NodePool",
        "nodepools",
        (),
        (
            _column("NodeClass", ".spec.template.spec.nodeClassRef.name"),
            _column("Nodes", ".status.nodes"),
            _READY,
            _AGE,
            _column("Weight", ".spec.weight", "integer", priority=1),
            _column("CPU", ".status.resources.cpu", priority=1),
            _column("Memory", ".status.resources.memory", priority=1),
        ),
        scale={"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.nodes"},
        converted=True,
    ),
    CRDKind(
        NodeClaim,
        "karpenter.sh",
        "NodeClaim",
        "nodeclaims",
        (),
        (
            _label_column("Type", "node\\.kubernetes\\.io/instance-type"),
            _label_column("Capacity", "karpenter\\.sh/capacity-type"),
            _label_column("Zone", "topology\\.kubernetes\\.io/zone"),
            _column("Node", ".status.nodeName"),
            _READY,
            _AGE,
            _column("ImageID", ".status.imageID", priority=1),
            _column("ID", ".status.providerID", priority=1),
            _label_column("NodePool", "karpenter\\.sh/nodepool", priority=1),
            _column("NodeClass", ".spec.nodeClassRef.name", priority=1),
            _column("Drifted", _condition_status("Drifted"), priority=1),
        ),
        converted=True,
    ),
    CRDKind(
        NodeOverlay,
        "karpenter.sh",
        "NodeOverlay",
        "nodeoverlays",
        ("overlays",),
        (_READY, _AGE, _column("Weight", ".spec.weight", "integer", priority=1)),
        version="v1alpha1",
    ),
    CRDKind(
        CapacityBuffer,
        "autoscaling.x-k8s.io",
        "CapacityBuffer",
        "capacitybuffers",
        ("cb",),
        (
            _column("Strategy", ".spec.provisioningStrategy"),
            _column("PodTemplate", ".status.podTemplateRef.name"),
            _column("Replicas", ".status.replicas", "integer"),
            _column("ConditionsType", ".status.conditions[*].type"),
            _column("ConditionsStatus", ".status.conditions[*].status"),
            _column("ConditionsReason", ".status.conditions[*].reason"),
            _AGE,
        ),
        version="v1beta1",
        scope="Namespaced",
        categories=("autoscaling",),
    ),
)
CONVERTED_KINDS = tuple(crd for crd in CRD_KINDS if crd.converted)

_DROPPED_KEYS = ("title",)


def structural_schema(model: type[ApiModel], *, spec_required: bool = True) -> dict[str, Any]:
    """The model's JSON schema as a structural OpenAPI v3 schema."""
    raw = model.model_json_schema(by_alias=True, mode="validation")
    definitions = raw.pop("$defs", {})

    def convert(node: Any) -> Any:
        if isinstance(node, list):
            return [convert(n) for n in node]
        if not isinstance(node, dict):
            return node
        node = dict(node)
        if "anyOf" in node:  # Optional[X] is X: absence, not null, is how Kubernetes says "unset"
            members = [m for m in node["anyOf"] if m != {"type": "null"}]
            if len(members) == 1:
                del node["anyOf"]
                node = {**members[0], **node}
        while "$ref" in node:
            target = definitions[node.pop("$ref").rsplit("/", 1)[1]]
            rules = [*target.get(VALIDATIONS, []), *node.get(VALIDATIONS, [])]
            node = {**target, **node}  # siblings of a reference (defaults, rules) refine it
            if rules:
                node[VALIDATIONS] = rules
        if node.get("default", 0) is None:
            del node["default"]
        if "additionalProperties" in node and isinstance(node["additionalProperties"], bool):
            del node["additionalProperties"]  # structural schemas prune unknown fields instead
        if "const" in node:
            node.setdefault("enum", [node.pop("const")])
        result = {k: convert(v) for k, v in node.items() if k not in _DROPPED_KEYS}
        if "properties" in result:
            result["type"] = "object"
        return result

    schema: dict[str, Any] = convert(raw)
    schema["properties"]["apiVersion"] = {"type": "string"}
    schema["properties"]["kind"] = {"type": "string"}
    schema["properties"]["metadata"] = {"type": "object"}
    if spec_required:
        schema["required"] = ["spec"]
    else:
        schema.pop("required", None)
    return schema


def crd_manifest(crd: CRDKind) -> dict[str, Any]:
    """The CustomResourceDefinition serving ``crd``'s kind at its version (the storage version)."""
    subresources: dict[str, Any] = {"status": {}}
    if crd.scale is not None:
        subresources["scale"] = dict(crd.scale)
    version: dict[str, Any] = {
        "name": crd.version,
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": structural_schema(crd.model, spec_required=crd.spec_required)},
        "subresources": subresources,
        "additionalPrinterColumns": list(crd.printer_columns),
    }
    names: dict[str, Any] = {
        "kind": crd.kind,
        "listKind": f"{crd.kind}List",
        "plural": crd.plural,
        "singular": crd.kind.lower(),
        "categories": list(crd.categories),
    }
    if crd.short_names:
        names["shortNames"] = list(crd.short_names)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": crd.name},
        "spec": {"group": crd.group, "names": names, "scope": crd.scope, "versions": [version]},
    }
