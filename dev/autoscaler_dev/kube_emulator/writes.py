"""The write verbs of the REST API (POST, PUT, PATCH) on a resource, its subresources and server-side apply,
with what the API server adds to each: field validation (``fieldValidation``) and managedFields
(``fieldManager``). ``server`` routes to it once the target is known."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from autoscaler_dev.kube_emulator import apply, fieldvalidation
from autoscaler_dev.kube_emulator.errors import ApiError
from autoscaler_dev.kube_emulator.eviction import evict
from autoscaler_dev.kube_emulator.openapi import OpenApi
from autoscaler_dev.kube_emulator.patch import APPLY, apply_patch
from autoscaler_dev.kube_emulator.resources import Obj, ResourceType
from autoscaler_dev.kube_emulator.scale import scale_of, serves_scale, write_scale
from autoscaler_dev.kube_emulator.store import Store

_CREATED: Obj = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}


@dataclass(frozen=True)
class Write:
    """One write request, decoded: what the server read off the URL, the query and the body."""

    method: str
    resource: ResourceType
    namespace: str
    name: str
    subresource: str
    body: Any
    content_type: str
    query: Mapping[str, str]
    user_agent: str = ""

    @property
    def manager(self) -> str:
        """The field manager: the one named, or as the API server derives it, the user agent's program name."""
        return self.query.get("fieldManager") or self.user_agent.split("/", 1)[0] or "unknown"


@dataclass(frozen=True)
class Answer:
    body: Obj
    code: int = 200
    warnings: tuple[str, ...] = ()


class Writes:
    def __init__(self, store: Store, openapi: OpenApi) -> None:
        self.store, self.openapi = store, openapi

    def handle(self, write: Write) -> Answer:
        method, resource, sub = write.method, write.resource, write.subresource
        key = (write.namespace, write.name)
        if sub == "scale":
            return Answer(self._scale(write))
        if method == "POST" and sub == "eviction":
            return Answer(evict(self.store, self.store.registry, *key, write.body), 201)
        if method == "POST" and sub == "binding":
            return Answer(self._bind(write), 201)
        if method == "POST" and not write.name:
            if resource.namespaced and not write.namespace:
                raise ApiError(405, "MethodNotAllowed", "create a namespaced object under its namespace")
            warnings = self._validate(write, write.body)
            body = self._managed(write, None, write.body)
            return Answer(self.store.create(resource, write.namespace, body), 201, warnings)
        if method == "PATCH" and write.name and write.content_type.startswith(APPLY) and not sub:
            warnings = self._validate(write, write.body)
            manager = write.query.get("fieldManager", "")
            force = write.query.get("force") in ("true", "1")
            obj, code = apply.server_side_apply(self.store, resource, *key, write.body, manager=manager, force=force)
            return Answer(obj, code, warnings)
        if method == "PUT" and write.name:
            warnings = self._validate(write, write.body)
            return Answer(self._change(write, lambda old: write.body), 200, warnings)
        if method == "PATCH" and write.name:
            found: list[str] = []

            def patched(old: Obj) -> Obj:
                new = apply_patch(old, write.body, write.content_type, resource.custom)
                found.extend(self._validate(write, new))
                return new

            return Answer(self._change(write, patched), 200, tuple(found))
        raise ApiError(405, "MethodNotAllowed", f"{method} is not supported on {resource.key}")

    def _change(self, write: Write, mutate: Callable[[Obj], Obj]) -> Obj:
        return self.store.patch(
            write.resource,
            write.namespace,
            write.name,
            lambda old: self._managed(write, old, mutate(old)),
            write.subresource,
        )

    def _validate(self, write: Write, body: Any) -> tuple[str, ...]:
        directive = write.query.get("fieldValidation", "")
        if directive not in ("Strict", "Warn") or write.subresource:
            return ()
        found = self.openapi.schema_of(write.resource)
        if found is None:
            return ()
        schema, schemas = found
        return tuple(fieldvalidation.check(body, directive, schema, schemas))

    def _managed(self, write: Write, old: Obj | None, new: Obj) -> Obj:
        if "fieldManager" not in write.query and not (old and old["metadata"].get("managedFields")):
            return new  # unmanaged writes (the autoscaler's own) stay as cheap as before
        if write.subresource == "status":
            return new
        return apply.record_update(old, new, write.manager, self.store.clock())

    def _scale(self, write: Write) -> Obj:
        if not serves_scale(write.resource):
            raise ApiError(404, "NotFound", f"the scale subresource of {write.resource.key} is not served")

        def managed(old: Obj, new: Obj) -> Obj:  # kubectl scale becomes the manager of spec.replicas
            return apply.record_update(old, new, write.manager, self.store.clock())

        target = (self.store, write.resource, write.namespace, write.name)
        if write.method == "PUT":
            return write_scale(*target, lambda _: write.body, record=managed)
        if write.method == "PATCH":
            return write_scale(
                *target, lambda scale: apply_patch(scale, write.body, write.content_type, True), record=managed
            )
        raise ApiError(405, "MethodNotAllowed", f"{write.method} is not supported on the scale subresource")

    def _bind(self, write: Write) -> Obj:
        node = (write.body.get("target") or {}).get("name")
        pods = write.resource

        def bind(pod: Obj) -> Obj:
            if (pod.get("spec") or {}).get("nodeName"):
                raise ApiError(
                    409, "Conflict", f'pod {write.name} is already assigned to node "{pod["spec"]["nodeName"]}"'
                )
            conditions = [
                c for c in (pod.get("status") or {}).get("conditions") or () if c.get("type") != "PodScheduled"
            ]
            conditions.append({"type": "PodScheduled", "status": "True"})
            return {
                **pod,
                "spec": {**pod.get("spec", {}), "nodeName": node},
                "status": {**pod.get("status", {}), "conditions": conditions},
            }

        with self.store.lock:
            bound = bind(self.store.get(pods, write.namespace, write.name))
            self.store.replace(pods, write.namespace, write.name, bound)
            self.store.replace(pods, write.namespace, write.name, bound, "status")
        return _CREATED


def read_scale(store: Store, resource: ResourceType, namespace: str, name: str) -> Obj:
    if not serves_scale(resource):
        raise ApiError(404, "NotFound", f"the scale subresource of {resource.key} is not served")
    return scale_of(store.get(resource, namespace, name), resource)
