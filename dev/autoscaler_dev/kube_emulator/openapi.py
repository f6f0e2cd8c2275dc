"""The OpenAPI documents kubectl reads: ``/openapi/v3`` (the index), ``/openapi/v3/apis/<group>/<version>``
(one document per group version: paths and schemas), and ``/openapi/v2`` (one document, JSON).

kubectl 1.32 reads v3: ``explain`` renders a kind's schema from its group version's document, and default
(strict) validation looks for a ``fieldValidation`` parameter on the kind's PATCH operation, then leaves the
check to the server (``fieldvalidation``). Our CRDs' schemas are their ``openAPIV3Schema``; built-in kinds'
come from the official client's models (``model_schemas``). Documents are built on first request and
rebuilt when the registry changes (a CRD posted to the API)."""

from __future__ import annotations

import copy
import hashlib
import json
import threading
from typing import Any

from autoscaler_dev.kube_emulator import model_schemas
from autoscaler_dev.kube_emulator.resources import Obj, Registry, ResourceType

_QUERY = ("dryRun", "fieldManager", "fieldValidation", "force", "pretty")
_META_DESCRIPTION = "Standard object's metadata."


def group_path(group: str, version: str) -> str:
    """``api/v1`` or ``apis/<group>/<version>``: how the v3 index names a group version."""
    return f"apis/{group}/{version}" if group else f"api/{version}"


def _crd_schema_name(resource: ResourceType) -> str:
    return ".".join([*reversed(resource.group.split(".")), resource.version, resource.kind])


def kind_schema(resource: ResourceType) -> tuple[str, dict[str, dict[str, Any]]] | None:
    """(the kind's schema name, every schema it needs) or None when the emulator has no schema for it."""
    if resource.schema is not None:
        meta_name, schemas = model_schemas.object_meta()
        schema = copy.deepcopy(dict(resource.schema))
        properties = schema.setdefault("properties", {})
        properties["metadata"] = {
            "allOf": [{"$ref": model_schemas.REF + meta_name}],
            "description": _META_DESCRIPTION,
        }
        name = _crd_schema_name(resource)
        return name, {**schemas, name: schema}
    model = model_schemas.model_for(resource)
    if model is None:
        return None
    return model_schemas.builtin_schema(model)


def _gvk(resource: ResourceType) -> dict[str, str]:
    return {"group": resource.group, "version": resource.version, "kind": resource.kind}


def _operation(resource: ResourceType, action: str, ref: str, *, writes: bool) -> Obj:
    names = [*_QUERY] if writes else ["pretty"]
    return {
        "operationId": f"{action}{resource.kind}",
        "parameters": [{"name": n, "in": "query", "schema": {"type": "string", "uniqueItems": True}} for n in names],
        "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {"$ref": ref}}}}},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": _gvk(resource),
    }


def _paths(resource: ResourceType, ref: str) -> dict[str, Obj]:
    base = "/" + group_path(resource.group, resource.version)
    collection = (
        f"{base}/namespaces/{{namespace}}/{resource.plural}" if resource.namespaced else (f"{base}/{resource.plural}")
    )
    item = {
        "get": _operation(resource, "get", ref, writes=False),
        "put": _operation(resource, "put", ref, writes=True),
        "patch": _operation(resource, "patch", ref, writes=True),
        "delete": _operation(resource, "delete", ref, writes=False),
    }
    paths = {
        collection: {
            "get": _operation(resource, "list", ref, writes=False),
            "post": _operation(resource, "post", ref, writes=True),
        },
        f"{collection}/{{name}}": item,
    }
    if resource.has_status:
        paths[f"{collection}/{{name}}/status"] = {k: v for k, v in item.items() if k != "delete"}
    return paths


class OpenApi:
    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self._lock = threading.Lock()
        self._built_for: frozenset[tuple[str, str, str, int]] = frozenset()
        self._groups: dict[str, bytes] = {}
        self._v2 = b""

    def _build(self) -> None:
        served = self.registry.all()
        version = frozenset((r.group, r.version, r.plural, id(r)) for r in served)
        with self._lock:
            if version == self._built_for:
                return
            groups: dict[str, Obj] = {}
            definitions: dict[str, Any] = {}
            v2_paths: dict[str, Any] = {}
            for resource in sorted(served, key=lambda r: (r.group, r.version, r.plural)):
                found = kind_schema(resource)
                if found is None:
                    continue
                name, schemas = found
                schemas = {**schemas, name: {**schemas[name], "x-kubernetes-group-version-kind": [_gvk(resource)]}}
                document = groups.setdefault(
                    group_path(resource.group, resource.version),
                    {
                        "openapi": "3.0.0",
                        "info": {"title": "Kubernetes", "version": "v1.32.0"},
                        "paths": {},
                        "components": {"schemas": {}},
                    },
                )
                paths = _paths(resource, model_schemas.REF + name)
                document["paths"].update(paths)
                document["components"]["schemas"].update(schemas)
                definitions.update(schemas)
                v2_paths.update(paths)
            self._groups = {path: json.dumps(doc).encode() for path, doc in groups.items()}
            v2 = {"swagger": "2.0", "info": {"title": "Kubernetes", "version": "v1.32.0"}, "paths": v2_paths}
            text = json.dumps({**v2, "definitions": definitions}).replace('"' + model_schemas.REF, '"#/definitions/')
            self._v2 = text.encode()
            self._built_for = version

    def v3_index(self) -> bytes:
        self._build()
        paths = {
            path: {"serverRelativeURL": f"/openapi/v3/{path}?hash={hashlib.sha256(body).hexdigest()[:32].upper()}"}
            for path, body in self._groups.items()
        }
        return json.dumps({"paths": paths}).encode()

    def v3_group(self, path: str) -> bytes | None:
        self._build()
        return self._groups.get(path)

    def v2(self) -> bytes:
        self._build()
        return self._v2

    def schema_of(self, resource: ResourceType) -> tuple[dict[str, Any], dict[str, dict[str, Any]]] | None:
        """(the kind's schema, every schema by name) for validation; None when there is none."""
        found = kind_schema(resource)
        if found is None:
            return None
        name, schemas = found
        return schemas[name], schemas
