"""The StatefulSet controller: pods ``<name>-0 .. <name>-(n-1)``, one at a time in order (OrderedReady: the next
once the previous is Ready) or all at once (Parallel), a PersistentVolumeClaim per volumeClaimTemplate and
ordinal (``<template>-<name>-<ordinal>``, kept when the set scales down), the highest ordinal removed first."""

from __future__ import annotations

import copy

from autoscaler_dev.world.controllers.common import Context, Obj, delete, owned, pod_from, ready, write_status


def _ordinal(pod: Obj, name: str) -> int:
    suffix = pod["metadata"]["name"].removeprefix(f"{name}-")
    return int(suffix) if suffix.isdigit() else -1


def _claims(ctx: Context, statefulset: Obj, ordinal: int) -> list[Obj]:
    """The set's claims for one ordinal, created when missing (volumes referring to them for the pod)."""
    name, namespace = statefulset["metadata"]["name"], statefulset["metadata"].get("namespace", "default")
    volumes = []
    for template in statefulset["spec"].get("volumeClaimTemplates") or ():
        claim = f"{template['metadata']['name']}-{name}-{ordinal}"
        if ctx.kube.get("v1", "PersistentVolumeClaim", claim, namespace) is None:
            body = copy.deepcopy(template)
            labels = {**((statefulset["spec"].get("selector") or {}).get("matchLabels") or {})}
            body.update(apiVersion="v1", kind="PersistentVolumeClaim")
            body["metadata"] = {**body.get("metadata", {}), "name": claim, "namespace": namespace, "labels": labels}
            body["status"] = {"phase": "Pending"}
            ctx.kube.create(body)
        volumes.append({"name": template["metadata"]["name"], "persistentVolumeClaim": {"claimName": claim}})
    return volumes


def _pod(ctx: Context, statefulset: Obj, ordinal: int) -> Obj:
    name = statefulset["metadata"]["name"]
    pod = pod_from(
        statefulset["spec"].get("template") or {},
        statefulset,
        name=f"{name}-{ordinal}",
        labels={
            "statefulset.kubernetes.io/pod-name": f"{name}-{ordinal}",
            "apps.kubernetes.io/pod-index": str(ordinal),
        },
    )
    claims = _claims(ctx, statefulset, ordinal)
    named = {v["name"] for v in claims}
    pod["spec"]["volumes"] = [*claims, *(v for v in pod["spec"].get("volumes") or () if v.get("name") not in named)]
    pod["spec"].setdefault("hostname", f"{name}-{ordinal}")
    return ctx.kube.create(pod)


def reconcile(ctx: Context, statefulset: Obj, pods: list[Obj]) -> None:
    name = statefulset["metadata"]["name"]
    wanted = int(statefulset["spec"].get("replicas", 1))
    mine = {_ordinal(p, name): p for p in owned(pods, statefulset)}
    ordered = statefulset["spec"].get("podManagementPolicy", "OrderedReady") == "OrderedReady"
    for ordinal in range(wanted):
        if ordinal in mine:
            if ordered and not ready(mine[ordinal]):
                break
            continue
        mine[ordinal] = _pod(ctx, statefulset, ordinal)
        if ordered:
            break
    for ordinal in sorted((o for o in mine if o >= wanted), reverse=True):
        delete(ctx, mine.pop(ordinal))
        if ordered:
            break
    ready_count = sum(ready(p) for p in mine.values())
    write_status(
        ctx,
        statefulset,
        {
            "observedGeneration": statefulset["metadata"].get("generation", 1),
            "replicas": len(mine),
            "readyReplicas": ready_count,
            "availableReplicas": ready_count,
            "currentReplicas": len(mine),
            "updatedReplicas": len(mine),
        },
    )
