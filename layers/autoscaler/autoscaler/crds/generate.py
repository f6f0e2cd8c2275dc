"""Build apiextensions.k8s.io/v1 CRDs from the pydantic models.

The OpenAPI schema is pydantic's JSON schema made structural, as the API server requires: references
inlined, ``Optional`` unwrapped, titles dropped. CEL rules come from the models' :class:`Rule` metadata,
so the API server enforces what our Python validation enforces.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from autoscaler.apis.rules import ApiModel
from autoscaler.apis.v1.ec2nodeclass import EC2NodeClass
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.apis.v1.nodepool import NodePool


def _ready(name: str = "Ready") -> dict[str, Any]:
    return {"name": name, "type": "string", "jsonPath": '.status.conditions[?(@.type=="Ready")].status'}


_AGE = {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}


@dataclass(frozen=True)
class CRDKind:
    """How one kind is served: names, scope and the columns ``kubectl get`` prints."""

    model: type[ApiModel]
    group: str
    kind: str
    plural: str
    short_names: tuple[str, ...] = ()
    printer_columns: tuple[dict[str, Any], ...] = field(default_factory=tuple)

    @property
    def name(self) -> str:
        return f"{self.plural}.{self.group}"


CRD_KINDS = (
    CRDKind(
        EC2NodeClass,
        "karpenter.k8s.aws",
        "EC2NodeClass",
        "ec2nodeclasses",
        ("ec2nc", "ec2ncs"),
        (_ready(), _AGE, {"name": "Role", "type": "string", "jsonPath": ".spec.role", "priority": 1}),
    ),
    CRDKind(
        NodePool,
        "karpenter.sh",
        "NodePool",
        "nodepools",
        (),
        (
            {"name": "NodeClass", "type": "string", "jsonPath": ".spec.template.spec.nodeClassRef.name"},
            {"name": "Nodes", "type": "string", "jsonPath": ".status.resources.nodes"},
            _ready(),
            _AGE,
            {"name": "Weight", "type": "integer", "jsonPath": ".spec.weight", "priority": 1},
            {"name": "CPU", "type": "string", "jsonPath": ".status.resources.cpu", "priority": 1},
            {"name": "Memory", "type": "string", "jsonPath": ".status.resources.memory", "priority": 1},
        ),
    ),
    CRDKind(
        NodeClaim,
        "karpenter.sh",
        "NodeClaim",
        "nodeclaims",
        (),
        (
            {
                "name": "Type",
                "type": "string",
                "jsonPath": ".metadata.labels.node\\.kubernetes\\.io/instance-type",
            },
            {
                "name": "Capacity",
                "type": "string",
                "jsonPath": ".metadata.labels.karpenter\\.sh/capacity-type",
            },
            {
                "name": "Zone",
                "type": "string",
                "jsonPath": ".metadata.labels.topology\\.kubernetes\\.io/zone",
            },
            {"name": "Node", "type": "string", "jsonPath": ".status.nodeName"},
            _ready(),
            _AGE,
            {"name": "ID", "type": "string", "jsonPath": ".status.providerID", "priority": 1},
            {
                "name": "NodePool",
                "type": "string",
                "jsonPath": ".metadata.labels.karpenter\\.sh/nodepool",
                "priority": 1,
            },
            {"name": "NodeClass", "type": "string", "jsonPath": ".spec.nodeClassRef.name", "priority": 1},
        ),
    ),
)

_DROPPED_KEYS = ("title",)


def structural_schema(model: type[ApiModel]) -> dict[str, Any]:
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
            node = {**target, **node}  # siblings of a reference (defaults, rules) refine it
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
    schema["required"] = ["spec"]
    return schema


def crd_manifest(crd: CRDKind) -> dict[str, Any]:
    """The CustomResourceDefinition serving ``crd``'s kind at v1 (the storage version)."""
    version: dict[str, Any] = {
        "name": "v1",
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": structural_schema(crd.model)},
        "subresources": {"status": {}},
        "additionalPrinterColumns": list(crd.printer_columns),
    }
    names: dict[str, Any] = {
        "kind": crd.kind,
        "listKind": f"{crd.kind}List",
        "plural": crd.plural,
        "singular": crd.kind.lower(),
        "categories": ["karpenter"],
    }
    if crd.short_names:
        names["shortNames"] = list(crd.short_names)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": crd.name},
        "spec": {"group": crd.group, "names": names, "scope": "Cluster", "versions": [version]},
    }
