"""EKS access entries served by the moto world, which has none: the API ``cdk deploy`` uses to map each function
role to the Kubernetes group its RBAC binds, and that ``autoscaler doctor`` reads back.

Create, describe, list, update and delete, with EKS's answers: an entry names an IAM principal of a cluster that
exists, one per principal (``ResourceInUseException``), a missing one is ``ResourceNotFoundException``, and the
``system:`` groups are refused as EKS refuses them. Entries live on moto's cluster object, so resetting moto's
backends forgets them with everything else.
"""

from __future__ import annotations

import threading
from typing import Any
from urllib.parse import unquote

from moto.core.responses import ActionResult, EmptyResult
from moto.eks import urls
from moto.eks.exceptions import InvalidParameterException, ResourceInUseException, ResourceNotFoundException
from moto.eks.models import Cluster
from moto.eks.responses import EKSResponse

_PATHS = {
    "{0}/clusters/(?P<name>[^/]+)/access-entries$": urls.response.dispatch,
    "{0}/clusters/(?P<name>[^/]+)/access-entries/(?P<principalArn>.+)$": urls.response.dispatch,
}
_installed = threading.Lock()


def install() -> None:
    """Serve access entries on every moto server this process starts from now on (idempotent)."""
    with _installed:
        if "create_access_entry" in vars(EKSResponse):
            return
        urls.url_paths.update(_PATHS)
        EKSResponse.create_access_entry = _create  # type: ignore[attr-defined]
        EKSResponse.describe_access_entry = _describe  # type: ignore[attr-defined]
        EKSResponse.list_access_entries = _list  # type: ignore[attr-defined]
        EKSResponse.update_access_entry = _update  # type: ignore[attr-defined]
        EKSResponse.delete_access_entry = _delete  # type: ignore[attr-defined]


def _entries(response: EKSResponse) -> tuple[Cluster, dict[str, dict[str, Any]]]:
    name = response._get_param("name")
    cluster = response.eks_backend.clusters.get(name)
    if cluster is None:
        raise ResourceNotFoundException(message=f"No cluster found for name: {name}.")
    if not hasattr(cluster, "access_entries"):
        cluster.access_entries = {}  # type: ignore[attr-defined]
    return cluster, cluster.access_entries  # type: ignore[attr-defined]


def _principal(response: EKSResponse) -> str:
    return unquote(str(response._get_param("principalArn") or ""))


def _groups(response: EKSResponse) -> list[str]:
    groups = list(response._get_param("kubernetesGroups") or [])
    reserved = [g for g in groups if g.startswith("system:")]
    if reserved:
        raise InvalidParameterException(
            message=f"The kubernetes group name {reserved[0]} is invalid, it cannot start with system:"
        )
    return groups


def _found(entries: dict[str, dict[str, Any]], principal: str) -> dict[str, Any]:
    if principal not in entries:
        raise ResourceNotFoundException(message=f"The specified access entry resource is not found: {principal}")
    return entries[principal]


def _create(self: EKSResponse) -> ActionResult:
    cluster, entries = _entries(self)
    principal = _principal(self)
    if principal in entries:
        raise ResourceInUseException(message=f"The specified access entry resource is already in use: {principal}")
    entry_type = self._get_param("type") or "STANDARD"
    entries[principal] = {
        "clusterName": cluster.name,
        "principalArn": principal,
        "kubernetesGroups": _groups(self),
        "accessEntryArn": f"{cluster.arn.replace(':cluster/', ':access-entry/')}/{principal.rsplit('/', 1)[-1]}",
        "username": self._get_param("username") or principal,
        "type": entry_type,
        "tags": self._get_param("tags") or {},
    }
    return ActionResult({"accessEntry": entries[principal]})


def _describe(self: EKSResponse) -> ActionResult:
    _, entries = _entries(self)
    return ActionResult({"accessEntry": _found(entries, _principal(self))})


def _list(self: EKSResponse) -> ActionResult:
    _, entries = _entries(self)
    return ActionResult({"accessEntries": sorted(entries)})


def _update(self: EKSResponse) -> ActionResult:
    _, entries = _entries(self)
    entry = _found(entries, _principal(self))
    if self._get_param("kubernetesGroups") is not None:
        entry["kubernetesGroups"] = _groups(self)
    if self._get_param("username"):
        entry["username"] = self._get_param("username")
    return ActionResult({"accessEntry": entry})


def _delete(self: EKSResponse) -> EmptyResult:
    _, entries = _entries(self)
    _found(entries, _principal(self))
    del entries[_principal(self)]
    return EmptyResult()
