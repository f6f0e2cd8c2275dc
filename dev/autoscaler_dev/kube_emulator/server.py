"""The HTTP face of the emulator: Kubernetes REST paths, verbs, watches and Status errors, on aiohttp's
low-level server (its C HTTP parser keeps a request well under a millisecond)."""

from __future__ import annotations

import asyncio
import copy
import logging
import threading
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import web

from autoscaler_dev.kube_emulator.bodies import decode
from autoscaler_dev.kube_emulator.errors import ApiError
from autoscaler_dev.kube_emulator.openapi import OpenApi
from autoscaler_dev.kube_emulator.patch import PatchError
from autoscaler_dev.kube_emulator.resources import Obj, ResourceType
from autoscaler_dev.kube_emulator.selectors import SelectorError, field_selector, label_selector
from autoscaler_dev.kube_emulator.store import Predicate, Store
from autoscaler_dev.kube_emulator.tables import table, wants_table
from autoscaler_dev.kube_emulator.watch import serve_watch
from autoscaler_dev.kube_emulator.writes import Write, Writes, read_scale

_log = logging.getLogger(__name__)

KUBERNETES_VERSION = {
    "major": "1",
    "minor": "32",
    "gitVersion": "v1.32.0",
    "gitCommit": "emulator",
    "gitTreeState": "clean",
    "buildDate": "2024-12-11T00:00:00Z",
    "goVersion": "go1.23",
    "compiler": "gc",
    "platform": "linux/amd64",
}
_JSON = "application/json"
# Authentication, flow control and authorization (``gate.KubeGate``): None lets the request through.
Gate = Callable[[web.BaseRequest], Awaitable[web.StreamResponse | None]]


@dataclass
class Fault:
    """An injected failure: the next ``times`` requests matching method and path get ``status`` (0: served
    normally) after ``delay`` seconds."""

    status: int
    method: str = ""
    path: str = ""
    times: int = 1
    delay: float = 0.0
    retry_after: int | None = None


class Faults:
    def __init__(self) -> None:
        self._faults: list[Fault] = []
        self._lock = threading.Lock()

    def add(self, fault: Fault) -> None:
        with self._lock:
            self._faults.append(fault)

    def clear(self) -> None:
        with self._lock:
            self._faults.clear()

    def take(self, method: str, path: str) -> Fault | None:
        if not self._faults:
            return None
        with self._lock:
            for fault in self._faults:
                if fault.method in ("", method) and fault.path in path:
                    fault.times -= 1
                    if fault.times <= 0:
                        self._faults.remove(fault)
                    return fault
        return None


@dataclass(frozen=True)
class Target:
    resource: ResourceType
    namespace: str
    name: str
    subresource: str


def _response(body: bytes, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(body=body, status=status, content_type=_JSON, headers=headers)


def _encode(obj: Any) -> bytes:
    return orjson.dumps(obj)


class KubeApi:
    """The aiohttp handler: ``await api(request)`` for every request."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.registry = store.registry
        self.faults = Faults()
        self.requests: Counter[str] = Counter()  # "VERB resource" -> count, for tests and benchmarks
        self.deleted_pods: list[Obj] = []  # pods deleted through the API (not evicted), as they were
        self.gate: Gate | None = None
        self.openapi = OpenApi(self.registry)
        self.writes = Writes(store, self.openapi)

    async def __call__(self, request: web.BaseRequest) -> web.StreamResponse:
        try:
            if self.gate is not None and (answered := await self.gate(request)) is not None:
                return answered
            fault = self.faults.take(request.method, request.path)
            if fault is not None:
                await asyncio.sleep(fault.delay)
                if fault.status:
                    headers = {"Retry-After": str(fault.retry_after)} if fault.retry_after is not None else None
                    raise ApiError(fault.status, "InjectedFault", f"injected fault {fault.status}", headers=headers)
            return await self._route(request)
        except ApiError as error:
            return _response(_encode(error.status()), error.code, error.headers)
        except SelectorError as error:
            return _response(_encode(ApiError(400, "BadRequest", str(error)).status()), 400)
        except PatchError as error:
            reason = "UnsupportedMediaType" if error.status == 415 else "Invalid"
            return _response(_encode(ApiError(error.status, reason, str(error)).status()), error.status)
        except Exception:  # a bug here must still answer as an API server does, never with a Python traceback
            _log.exception("the emulator failed to serve %s %s", request.method, request.path)
            failure = ApiError(500, "InternalError", "Internal error occurred: the emulator failed on this request")
            return _response(_encode(failure.status()), 500)

    async def _route(self, request: web.BaseRequest) -> web.StreamResponse:
        parts = [p for p in request.path.split("/") if p]
        if not parts:
            return _response(_encode({"paths": ["/api", "/api/v1", "/apis", "/openapi/v2", "/openapi/v3", "/version"]}))
        if parts[0] == "api":
            if len(parts) == 1:
                return _response(_encode({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}))
            return await self._group_version(request, "", parts[1], parts[2:])
        if parts[0] == "apis":
            if len(parts) == 1:
                return _response(_encode(self.registry.api_group_list()))
            if len(parts) == 2:
                return _discovery(self.registry.api_group(parts[1]))
            return await self._group_version(request, parts[1], parts[2], parts[3:])
        if parts[0] == "openapi":
            return self._openapi(request, parts[1:])
        if parts == ["version"]:
            return _response(_encode(KUBERNETES_VERSION))
        if parts[0] in ("healthz", "livez", "readyz"):
            return web.Response(text="ok")
        raise ApiError(404, "NotFound", "the server could not find the requested resource")

    def _openapi(self, request: web.BaseRequest, parts: list[str]) -> web.Response:
        if parts == ["v2"]:
            accept = request.headers.get("Accept", "")
            if "protobuf" in accept and "json" not in accept and "*/*" not in accept:
                raise ApiError(406, "NotAcceptable", "only application/json is served for /openapi/v2")
            return _response(self.openapi.v2())
        if parts == ["v3"]:
            return _response(self.openapi.v3_index())
        document = self.openapi.v3_group("/".join(parts[1:])) if parts[:1] == ["v3"] else None
        if document is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        return _response(document)

    async def _group_version(
        self, request: web.BaseRequest, group: str, version: str, rest: list[str]
    ) -> web.StreamResponse:
        if not rest:
            return _discovery(self.registry.api_resource_list(group, version))
        namespace = ""
        if rest[0] == "namespaces" and len(rest) >= 3:
            namespace, rest = rest[1], rest[2:]
        resource = self.registry.get(group, version, rest[0])
        if resource is not None and resource.key == "nodes" and len(rest) > 2 and rest[2] == "proxy":
            raise ApiError(
                404, "NotFound", f"nodes/{rest[1]}/proxy is not served: the embedded world runs no kubelet to proxy to"
            )
        if resource is None or len(rest) > 3:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if not resource.namespaced:
            namespace = ""
        target = Target(resource, namespace, rest[1] if len(rest) > 1 else "", rest[2] if len(rest) > 2 else "")
        if target.subresource and target.subresource not in resource.subresources:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        return await self._serve(request, target)

    async def _serve(self, request: web.BaseRequest, target: Target) -> web.StreamResponse:
        method, resource, query = request.method, target.resource, request.query
        self.requests[f"{method} {resource.key}"] += 1
        key = (target.namespace, target.name)
        if method == "GET" and target.subresource == "scale":
            return _response(_encode(read_scale(self.store, resource, *key)))
        if method == "GET" and target.name:
            obj = self.store.get(resource, *key)
            if wants_table(request):
                return _response(
                    _encode(
                        table(
                            resource,
                            [obj],
                            now=self.store.clock(),
                            include_object=query.get("includeObject", "Metadata"),
                        )
                    )
                )
            return _response(self.store.encoded(resource, key))
        if method == "GET":
            if query.get("watch") in ("true", "1"):
                return await serve_watch(
                    request, self.store, target.resource, target.namespace, self._predicate(request, target)
                )
            return self._list(request, target)
        if method in ("POST", "PUT", "PATCH"):
            write = Write(
                method,
                resource,
                target.namespace,
                target.name,
                target.subresource,
                await _body(request),
                request.headers.get("Content-Type", ""),
                query,
                request.headers.get("User-Agent", ""),
            )
            answer = self.writes.handle(write)
            warnings = (w.replace('"', '\\"') for w in answer.warnings)
            headers = {"Warning": ", ".join(f'299 - "{w}"' for w in warnings)} if answer.warnings else None
            return _response(_encode(answer.body), answer.code, headers)
        if method == "DELETE" and target.name:
            if resource.key == "pods":  # deleted, not evicted: what a PDB does not guard (simulation invariants)
                self.deleted_pods.append(copy.deepcopy(self.store.get(resource, *key)))
            options = await _body(request)
            return _response(_encode(self.store.delete(resource, *key, options.get("preconditions"))))
        if method == "DELETE":
            return self._delete_collection(request, target)
        raise ApiError(405, "MethodNotAllowed", f"{method} is not supported on {resource.key}")

    def _predicate(self, request: web.BaseRequest, target: Target) -> Predicate | None:
        labels = label_selector(request.query.get("labelSelector"))
        fields = field_selector(request.query.get("fieldSelector"), target.resource.field_labels, target.resource.key)
        if labels and fields:
            return lambda obj: labels(obj) and fields(obj)
        return labels or fields

    def _list(self, request: web.BaseRequest, target: Target) -> web.Response:
        resource, query = target.resource, request.query
        try:
            limit = int(query.get("limit") or 0)
        except ValueError:
            raise ApiError(400, "BadRequest", f"invalid limit {query.get('limit')!r}") from None
        keys, list_rv, token, remaining = self.store.select(
            resource, target.namespace, self._predicate(request, target), limit, query.get("continue", "")
        )
        metadata: Obj = {"resourceVersion": list_rv}
        if token:
            metadata.update({"continue": token, "remainingItemCount": remaining})
        if wants_table(request):
            objects = [self.store.get(resource, *k) for k in keys]
            include = query.get("includeObject", "Metadata")
            return _response(
                _encode(
                    table(resource, objects, now=self.store.clock(), include_object=include, list_metadata=metadata)
                )
            )
        head = _encode({"kind": f"{resource.kind}List", "apiVersion": resource.api_version, "metadata": metadata})
        items = b",".join(self.store.encoded(resource, k) for k in keys)
        return _response(head[:-1] + b',"items":[' + items + b"]}")

    def _delete_collection(self, request: web.BaseRequest, target: Target) -> web.Response:
        keys, _, _, _ = self.store.select(target.resource, target.namespace, self._predicate(request, target))
        deleted = [self.store.delete(target.resource, *k) for k in keys]
        list_kind = f"{target.resource.kind}List"
        return _response(
            _encode({"kind": list_kind, "apiVersion": target.resource.api_version, "metadata": {}, "items": deleted})
        )


def _discovery(document: Obj | None) -> web.Response:
    if document is None:
        raise ApiError(404, "NotFound", "the server could not find the requested resource")
    return _response(_encode(document))


async def _body(request: web.BaseRequest) -> Any:
    return decode(await request.read(), request.headers.get("Content-Type", ""))
