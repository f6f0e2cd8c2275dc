"""OpenAPI schemas of the built-in kinds, read from the official client's generated models (their
``openapi_types`` and pydantic fields hold the API's own field names, types and descriptions), so that
``kubectl explain`` and strict field validation know every field of a Pod or a Deployment without a copy of
Kubernetes' OpenAPI document in this repository.

The client does not say which fields are required or which ``object`` is an IntOrString: such fields are
left open (``x-kubernetes-preserve-unknown-fields``), which only ever makes validation more lenient."""

from __future__ import annotations

import functools
import re
from typing import Any

from autoscaler_dev.kube_emulator.resources import ResourceType

REF = "#/components/schemas/"
_PRIMITIVES: dict[str, dict[str, Any]] = {
    "str": {"type": "string"},
    "int": {"type": "integer", "format": "int64"},
    "float": {"type": "number", "format": "double"},
    "bool": {"type": "boolean"},
    "datetime": {"type": "string", "format": "date-time"},
    "date": {"type": "string", "format": "date"},
    "bytes": {"type": "string", "format": "byte"},
    "object": {"x-kubernetes-preserve-unknown-fields": True},
}
_LIST = re.compile(r"^List\[(.+)\]$")
_DICT = re.compile(r"^Dict\[str, (.+)\]$")


def _models() -> Any:
    from kubernetes.client import models  # lazily: half a second, paid by the first OpenAPI request only

    return models


def schema_name(model: str) -> str:
    return f"io.k8s.api.{model}"


def model_for(resource: ResourceType) -> str | None:
    """The client's model class of a built-in kind (``CoreV1Event``, ``EventsV1Event``, ``V1Deployment``)."""
    models = _models()
    group = (resource.group.split(".")[0] or "core").capitalize()
    version = resource.version.capitalize()
    for name in (f"{group}{version}{resource.kind}", f"{version}{resource.kind}"):
        if hasattr(models, name):
            return name
    return None


def _type_schema(type_name: str, found: dict[str, dict[str, Any]]) -> dict[str, Any]:
    if type_name in _PRIMITIVES:
        return dict(_PRIMITIVES[type_name])
    if (items := _LIST.match(type_name)) is not None:
        return {"type": "array", "items": _type_schema(items.group(1), found)}
    if (values := _DICT.match(type_name)) is not None:
        return {"type": "object", "additionalProperties": _type_schema(values.group(1), found)}
    collect(type_name, found)
    return {"$ref": REF + schema_name(type_name)}


def collect(model_name: str, found: dict[str, dict[str, Any]]) -> None:
    """Add the schema of ``model_name`` and of every model it refers to into ``found`` (by schema name)."""
    name = schema_name(model_name)
    if name in found:
        return
    model = getattr(_models(), model_name)
    found[name] = {}  # placeholder: models refer to themselves (JSONSchemaProps) and to each other
    properties: dict[str, Any] = {}
    fields = {(info.alias or name): info for name, info in model.model_fields.items()}
    for attribute, type_name in model.openapi_types.items():
        field = _type_schema(type_name, found)
        info = fields[attribute]
        if "$ref" in field:  # a description beside a reference, as the API server writes it
            field = {"allOf": [field]}
        if info.description:
            field["description"] = info.description
        properties[info.serialization_alias or attribute] = field
    found[name] = {"type": "object", "properties": properties}


@functools.cache
def builtin_schema(model_name: str) -> tuple[str, dict[str, dict[str, Any]]]:
    """(the kind's schema name, every schema it needs)."""
    found: dict[str, dict[str, Any]] = {}
    collect(model_name, found)
    return schema_name(model_name), found


def object_meta() -> tuple[str, dict[str, dict[str, Any]]]:
    return builtin_schema("V1ObjectMeta")
