"""The ``scale`` subresource of Deployments, ReplicaSets and StatefulSets and of custom resources whose CRD declares
one (a NodePool: ``.spec.replicas`` / ``.status.nodes``): an ``autoscaling/v1`` Scale read from and written to the
object's replicas (``kubectl scale`` patches it). A write goes through the object's admission, as the API server
validates the custom resource a scale write changes (a dynamic NodePool cannot be made static this way)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from autoscaler_dev.kube_emulator.errors import ApiError
from autoscaler_dev.kube_emulator.resources import Obj, ResourceType
from autoscaler_dev.kube_emulator.store import Store


def _selector_text(selector: Mapping[str, Any] | None) -> str:
    parts = [f"{k}={v}" for k, v in sorted(((selector or {}).get("matchLabels") or {}).items())]
    for expression in (selector or {}).get("matchExpressions") or ():
        values = ",".join(expression.get("values") or ())
        operator = str(expression.get("operator", ""))
        key = expression.get("key")
        parts.append(
            {"In": f"{key} in ({values})", "NotIn": f"{key} notin ({values})", "DoesNotExist": f"!{key}"}.get(
                operator, str(key)
            )
        )
    return ",".join(parts)


WORKLOADS = ("deployments.apps", "replicasets.apps", "statefulsets.apps")


def serves_scale(resource: ResourceType) -> bool:
    return resource.key in WORKLOADS or (resource.custom and resource.scale is not None)


def _path(text: str) -> list[str]:
    return [part for part in text.lstrip(".").split(".") if part]


def _read(obj: Obj, path: str) -> Any:
    value: Any = obj
    for part in _path(path):
        value = value.get(part) if isinstance(value, Mapping) else None
    return value


def _written(obj: Obj, path: str, value: Any) -> Obj:
    head, *rest = _path(path)
    if not rest:
        return {**obj, head: value}
    return {**obj, head: _written(dict(obj.get(head) or {}), ".".join(rest), value)}


def scale_of(workload: Obj, resource: ResourceType | None = None) -> Obj:
    """The Scale of ``workload`` (a custom resource's when ``resource`` is one with a scale subresource)."""
    if resource is not None and resource.custom and resource.scale is not None:
        paths = resource.scale
        replicas, status = _read(workload, paths["specReplicasPath"]), _read(workload, paths["statusReplicasPath"])
        selector = _read(workload, paths["labelSelectorPath"]) if "labelSelectorPath" in paths else None
        scale = _scale_metadata(workload)
        scale["spec"] = {"replicas": int(replicas or 0)}
        scale["status"] = {"replicas": int(status or 0), **({"selector": selector} if selector else {})}
        return scale
    spec, status = workload.get("spec") or {}, workload.get("status") or {}
    scale = _scale_metadata(workload)
    scale["spec"] = {"replicas": int(spec.get("replicas", 1))}
    scale["status"] = {"replicas": int(status.get("replicas", 0)), "selector": _selector_text(spec.get("selector"))}
    return scale


def _scale_metadata(workload: Obj) -> Obj:
    metadata = workload["metadata"]
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            k: metadata[k]
            for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if k in metadata
        },
    }


def _as_is(_old: Obj, new: Obj) -> Obj:
    return new


def write_scale(
    store: Store,
    resource: ResourceType,
    namespace: str,
    name: str,
    change: Callable[[Obj], Obj],
    *,
    record: Callable[[Obj, Obj], Obj] = _as_is,
) -> Obj:
    """Apply ``change`` (the Scale as read -> the Scale wanted) to the workload's replicas, the workload passed
    through ``record`` (old, new -> stored: managedFields); returns the new Scale."""
    with store.lock:
        workload = store.get(resource, namespace, name)
        wanted = change(scale_of(workload, resource))
        # Scale's replicas is omitempty in the API's Go types: a body without it (kubectl's PUT of 0) means 0.
        replicas = (wanted.get("spec") or {}).get("replicas", 0)
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
            raise ApiError(
                422,
                "Invalid",
                f'Scale.autoscaling "{name}" is invalid: spec.replicas: Invalid value: {replicas!r}: '
                "must be greater than or equal to 0",
            )
        version = (wanted.get("metadata") or {}).get("resourceVersion")
        path = resource.scale["specReplicasPath"] if resource.custom and resource.scale else ".spec.replicas"
        body = _written(workload, path, replicas)
        body["metadata"] = {
            **workload["metadata"],
            "resourceVersion": version or workload["metadata"]["resourceVersion"],
        }
        return scale_of(store.replace(resource, namespace, name, record(workload, body)), resource)
