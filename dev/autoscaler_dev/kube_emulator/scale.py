"""The ``scale`` subresource of Deployments, ReplicaSets and StatefulSets: an ``autoscaling/v1`` Scale read from
and written to the workload's ``spec.replicas`` (``kubectl scale`` patches it)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from autoscaler_dev.kube_emulator.resources import Obj, ResourceType
from autoscaler_dev.kube_emulator.store import ApiError, Store


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


def scale_of(workload: Obj) -> Obj:
    metadata = workload["metadata"]
    spec, status = workload.get("spec") or {}, workload.get("status") or {}
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            k: metadata[k]
            for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if k in metadata
        },
        "spec": {"replicas": int(spec.get("replicas", 1))},
        "status": {"replicas": int(status.get("replicas", 0)), "selector": _selector_text(spec.get("selector"))},
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
        wanted = change(scale_of(workload))
        replicas = (wanted.get("spec") or {}).get("replicas")
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
            raise ApiError(
                422,
                "Invalid",
                f'Scale.autoscaling "{name}" is invalid: spec.replicas: Invalid value: {replicas!r}: '
                "must be greater than or equal to 0",
            )
        version = (wanted.get("metadata") or {}).get("resourceVersion")
        body = {**workload, "spec": {**(workload.get("spec") or {}), "replicas": replicas}}
        body["metadata"] = {
            **workload["metadata"],
            "resourceVersion": version or workload["metadata"]["resourceVersion"],
        }
        return scale_of(store.replace(resource, namespace, name, record(workload, body)))
