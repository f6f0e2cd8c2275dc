"""Server-side field validation (the ``fieldValidation`` query parameter kubectl sends): fields the kind's schema
does not declare are an error (``Strict``: 400, as the API server's strict decoding answers), a ``Warning``
header (``Warn``) or nothing (``Ignore``, and requests that do not ask, as the autoscaler's own)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from autoscaler_dev.kube_emulator.errors import ApiError
from autoscaler_dev.kube_emulator.model_schemas import REF

Schemas = Mapping[str, Mapping[str, Any]]


def _resolve(schema: Mapping[str, Any], schemas: Schemas) -> Mapping[str, Any]:
    while True:
        if "$ref" in schema:
            schema = schemas.get(str(schema["$ref"]).removeprefix(REF), {})
        elif len(schema.get("allOf") or ()) == 1:
            schema = {**schema["allOf"][0], **{k: v for k, v in schema.items() if k != "allOf"}}
        else:
            return schema


def unknown_fields(value: Any, schema: Mapping[str, Any], schemas: Schemas, path: str = "") -> list[str]:
    """Paths (``spec.foo``, ``spec.containers[0].bar``) of fields in ``value`` that ``schema`` does not declare."""
    schema = _resolve(schema, schemas)
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        return []
    found: list[str] = []
    if isinstance(value, Mapping):
        properties = schema.get("properties")
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            if properties is not None and key in properties:
                found += unknown_fields(item, properties[key], schemas, where)
            elif isinstance(extra, Mapping):
                found += unknown_fields(item, extra, schemas, where)
            elif properties is not None and extra is not True:
                found.append(where)
    elif isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for index, item in enumerate(value):
            found += unknown_fields(item, schema["items"], schemas, f"{path}[{index}]")
    return found


def check(body: Any, directive: str, schema: Mapping[str, Any] | None, schemas: Schemas) -> list[str]:
    """Apply ``directive`` to ``body``; returns the warnings to send (Warn) or raises 400 (Strict)."""
    if schema is None or directive not in ("Strict", "Warn") or not isinstance(body, Mapping):
        return []
    # apiVersion, kind and status are not the caller's to misspell into: only what the schema declares below them
    unknown = [f for f in unknown_fields(body, schema, schemas) if f not in ("apiVersion", "kind")]
    messages = [f'unknown field "{field}"' for field in unknown]
    if messages and directive == "Strict":
        raise ApiError(400, "BadRequest", "strict decoding error: " + ", ".join(messages))
    return messages
