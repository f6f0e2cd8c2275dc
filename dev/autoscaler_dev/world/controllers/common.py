"""What the workload controllers share: ownership, pods from templates, readiness, status writes."""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from autoscaler.apis.v1.conditions import timestamp
from autoscaler_dev.kube_emulator.enforcement import ObjectAccess
from autoscaler_dev.kube_emulator.errors import ApiError

Obj = dict[str, Any]


@dataclass
class Context:
    """What every controller works with: the API with the controller's own credentials, the virtual clock, and
    (for what a kubelet reports about the pods a controller runs) a node's kubelet."""

    kube: ObjectAccess
    now: Callable[[], datetime]
    kubelet: Callable[[str], ObjectAccess]

    def stamp(self) -> str:
        return timestamp(self.now())


def uid(obj: Mapping[str, Any]) -> str:
    return str(obj["metadata"]["uid"])


def controller_of(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    refs = (obj.get("metadata") or {}).get("ownerReferences") or ()
    return next((r for r in refs if r.get("controller")), None)


def owned(objects: list[Obj], owner: Mapping[str, Any]) -> list[Obj]:
    """The live (not deleting) objects whose controller is ``owner``."""
    owner_uid = uid(owner)
    return [
        o
        for o in objects
        if (controller_of(o) or {}).get("uid") == owner_uid and not o["metadata"].get("deletionTimestamp")
    ]


def owner_reference(owner: Mapping[str, Any]) -> Obj:
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": uid(owner),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def template_hash(template: Mapping[str, Any]) -> str:
    """A short stable digest of a pod template (``pod-template-hash``, ``controller-revision-hash``)."""
    digest = hashlib.sha256(json.dumps(template, sort_keys=True).encode()).hexdigest()
    return digest[:10]


def pod_from(
    template: Mapping[str, Any], owner: Mapping[str, Any], *, name: str = "", labels: Mapping[str, str] = {}
) -> Obj:
    """A pod as ``owner``'s controller creates it from its template (``generateName`` unless ``name``)."""
    metadata = copy.deepcopy(dict(template.get("metadata") or {}))
    metadata["labels"] = {**(metadata.get("labels") or {}), **labels}
    metadata["namespace"] = owner["metadata"].get("namespace") or "default"
    metadata["ownerReferences"] = [owner_reference(owner)]
    if name:
        metadata["name"] = name
    else:
        metadata["generateName"] = f"{owner['metadata']['name']}-"
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": copy.deepcopy(template.get("spec") or {})}


def ready(pod: Mapping[str, Any]) -> bool:
    status = pod.get("status") or {}
    conditions = status.get("conditions") or ()
    return status.get("phase") == "Running" and any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in conditions
    )


def scaled(value: Any, total: int, *, up: bool) -> int:
    """An IntOrString (``3`` or ``"25%"`` of ``total``, rounded up or down)."""
    if isinstance(value, str) and value.endswith("%"):
        exact = int(value[:-1]) * total / 100
        return math.ceil(exact) if up else math.floor(exact)
    return int(value or 0)


def write_status(ctx: Context, obj: Obj, status: Mapping[str, Any]) -> None:
    """Replace ``obj``'s status when it differs (a controller writes only what changed)."""
    status = {**status, "conditions": _kept_times(obj, status.get("conditions"))} if "conditions" in status else status
    if (obj.get("status") or {}) == status:
        return
    with contextlib.suppress(ApiError):  # deleted meanwhile: the next step sees it gone (a 403 is counted)
        ctx.kube.replace(obj, {"status": dict(status)}, "status")


def set_replicas(ctx: Context, obj: Obj, replicas: int) -> None:
    if int((obj.get("spec") or {}).get("replicas", 1)) == replicas:
        return
    ctx.kube.replace(obj, {**obj, "spec": {**obj["spec"], "replicas": replicas}})


def delete(ctx: Context, obj: Obj) -> None:
    metadata = obj["metadata"]
    with contextlib.suppress(ApiError):  # gone already (a 403 is counted)
        ctx.kube.delete(obj["apiVersion"], obj["kind"], metadata["name"], metadata.get("namespace") or "default")


def condition(kind: str, ok: bool, reason: str, message: str, now: str) -> Obj:
    return {
        "type": kind,
        "status": "True" if ok else "False",
        "reason": reason,
        "message": message,
        "lastTransitionTime": now,
        "lastUpdateTime": now,
    }


def _kept_times(obj: Mapping[str, Any], conditions: Any) -> list[Obj]:
    """Conditions with the times they had while their status and reason stay the same."""
    before = {c.get("type"): c for c in (obj.get("status") or {}).get("conditions") or ()}
    kept = []
    for new in conditions or ():
        old = before.get(new.get("type"))
        same = old is not None and (old.get("status"), old.get("reason")) == (new.get("status"), new.get("reason"))
        kept.append(
            {**new, **{k: old[k] for k in ("lastTransitionTime", "lastUpdateTime") if k in old}}
            if same and old
            else new
        )
    return kept
