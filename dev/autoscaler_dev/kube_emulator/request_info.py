"""What a request asks for, in the authorizer's terms: verb, API group, resource, subresource, namespace and
name for a resource request, or the path for a non-resource one (``/version``, ``/healthz``, ``/apis``).

It follows the API server's reading of a path: ``/api/v1/...`` and ``/apis/<group>/<version>/...`` are resource
requests (discovery documents directly under them are not); ``GET`` is ``get`` with a name and ``list`` or
``watch`` without one (a list or watch narrowed by ``fieldSelector=metadata.name=X`` names ``X``); ``DELETE``
without a name is ``deletecollection``; a Namespace is its own namespace.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from autoscaler_dev.kube_emulator.authentication import User

_NAMESPACE_SUBRESOURCES = ("status", "finalize")
_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


@dataclass(frozen=True)
class Attributes:
    user: User
    verb: str
    resource_request: bool
    path: str = ""
    api_group: str = ""
    api_version: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""

    def as_user(self, user: User) -> Attributes:
        return replace(self, user=user)


def request_attributes(user: User, method: str, path: str, query: Mapping[str, str]) -> Attributes:
    parts = [p for p in path.split("/") if p]
    if parts[:1] == ["api"] and len(parts) >= 3:
        group, version, rest = "", parts[1], parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 4:
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return Attributes(user, "get" if method == "HEAD" else method.lower(), False, path=path)
    namespace = ""
    if rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    resource, name, subresource = rest[0], _at(rest, 1), "/".join(rest[2:])
    verb = _verb(method, name, query)
    if verb in ("list", "watch") and not name:
        name = _named_by_field_selector(query.get("fieldSelector", ""))
    return Attributes(
        user,
        verb,
        True,
        path=path,
        api_group=group,
        api_version=version,
        resource=resource,
        subresource=subresource,
        namespace=namespace,
        name=name,
    )


def _at(parts: list[str], index: int) -> str:
    return parts[index] if len(parts) > index else ""


def _verb(method: str, name: str, query: Mapping[str, str]) -> str:
    if method in ("GET", "HEAD"):
        if query.get("watch") in ("true", "1"):
            return "watch"
        return "get" if name else "list"
    if method == "DELETE" and not name:
        return "deletecollection"
    return _VERBS.get(method, method.lower())


def _named_by_field_selector(selector: str) -> str:
    for term in selector.split(","):
        key, _, value = term.partition("=")
        if key.strip() == "metadata.name" and value and not value.startswith("="):
            return value.strip()
    return ""
