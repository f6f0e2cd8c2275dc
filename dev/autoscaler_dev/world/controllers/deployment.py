"""The Deployment controller: one ReplicaSet per pod template (``pod-template-hash``), rolled out as
``strategy`` says (RollingUpdate within maxSurge / maxUnavailable, or Recreate), with the status and
conditions ``kubectl rollout status`` waits on."""

from __future__ import annotations

from autoscaler_dev.world.controllers.common import (
    Context,
    Obj,
    condition,
    owned,
    owner_reference,
    scaled,
    set_replicas,
    template_hash,
    write_status,
)

HASH_LABEL = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"


def _revision(obj: Obj) -> int:
    return int((obj["metadata"].get("annotations") or {}).get(REVISION, "0") or 0)


def _new_replicaset(ctx: Context, deployment: Obj, digest: str, revision: int, replicas: int) -> Obj:
    template = deployment["spec"].get("template") or {}
    metadata = template.get("metadata") or {}
    labels = {**(metadata.get("labels") or {}), HASH_LABEL: digest}
    selector = deployment["spec"].get("selector") or {}
    body = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": f"{deployment['metadata']['name']}-{digest}",
            "namespace": deployment["metadata"].get("namespace", "default"),
            "labels": labels,
            "annotations": {REVISION: str(revision)},
            "ownerReferences": [owner_reference(deployment)],
        },
        "spec": {
            "replicas": replicas,
            "selector": {**selector, "matchLabels": {**(selector.get("matchLabels") or {}), HASH_LABEL: digest}},
            "template": {**template, "metadata": {**metadata, "labels": labels}},
        },
    }
    return ctx.kube.create(body)


def reconcile(ctx: Context, deployment: Obj, replicasets: list[Obj]) -> None:
    spec = deployment["spec"]
    desired = int(spec.get("replicas", 1))
    digest = template_hash(spec.get("template") or {})
    mine = owned(replicasets, deployment)
    new = next((rs for rs in mine if (rs["metadata"].get("labels") or {}).get(HASH_LABEL) == digest), None)
    old = [rs for rs in mine if rs is not new]
    strategy = spec.get("strategy") or {}
    if new is None:
        revision = max((_revision(rs) for rs in mine), default=0) + 1
        start = desired if not old else 0
        new = _new_replicaset(ctx, deployment, digest, revision, start)
    if spec.get("paused"):
        pass
    elif strategy.get("type") == "Recreate":
        for rs in old:
            set_replicas(ctx, rs, 0)
        if not any(int((rs.get("status") or {}).get("replicas", 0)) for rs in old):
            set_replicas(ctx, new, desired)
    else:
        _roll(ctx, desired, new, old, strategy.get("rollingUpdate") or {})
    _status(ctx, deployment, new, old)


def _replicas(rs: Obj) -> int:
    return int(rs["spec"].get("replicas", 0))


def _available(rs: Obj) -> int:
    return int((rs.get("status") or {}).get("availableReplicas", 0))


def _roll(ctx: Context, desired: int, new: Obj, old: list[Obj], rolling: Obj) -> None:
    """One step of a rolling update: grow the new ReplicaSet within maxSurge, shrink the old ones (oldest first)
    as far as maxUnavailable allows, counting the new ReplicaSet's pods that are not available yet."""
    surge = scaled(rolling.get("maxSurge", "25%"), desired, up=True)
    unavailable = scaled(rolling.get("maxUnavailable", "25%"), desired, up=False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    replicas, available = _replicas, _available
    total = replicas(new) + sum(map(replicas, old))
    if not old:
        set_replicas(ctx, new, desired)
        return
    grow = min(desired - replicas(new), max(0, desired + surge - total))
    if grow > 0:
        set_replicas(ctx, new, replicas(new) + grow)
        total += grow
    new_unavailable = replicas(new) + (grow if grow > 0 else 0) - available(new)
    room = total - (desired - unavailable) - max(0, new_unavailable)
    for rs in sorted(old, key=_revision):
        if room <= 0:
            break
        cut = min(replicas(rs), room)
        if cut:
            set_replicas(ctx, rs, replicas(rs) - cut)
            room -= cut


def _status(ctx: Context, deployment: Obj, new: Obj, old: list[Obj]) -> None:
    every = [new, *old]

    def count(key: str) -> int:
        return sum(int((rs.get("status") or {}).get(key, 0)) for rs in every)

    desired = int(deployment["spec"].get("replicas", 1))
    updated = int((new.get("status") or {}).get("replicas", 0))
    available = count("availableReplicas")
    now = ctx.stamp()
    done = updated >= desired and count("replicas") == updated and available >= updated
    progressing = condition(
        "Progressing",
        True,
        "NewReplicaSetAvailable" if done else "ReplicaSetUpdated",
        f'ReplicaSet "{new["metadata"]["name"]}" ' + ("has successfully progressed." if done else "is progressing."),
        now,
    )
    minimum = desired - scaled(
        ((deployment["spec"].get("strategy") or {}).get("rollingUpdate") or {}).get("maxUnavailable", "25%"),
        desired,
        up=False,
    )
    has_minimum = available >= minimum
    availability = condition(
        "Available",
        has_minimum,
        "MinimumReplicasAvailable" if has_minimum else "MinimumReplicasUnavailable",
        "Deployment has minimum availability." if has_minimum else "Deployment does not have minimum availability.",
        now,
    )
    write_status(
        ctx,
        deployment,
        {
            "observedGeneration": deployment["metadata"].get("generation", 1),
            "replicas": count("replicas"),
            "updatedReplicas": updated,
            "readyReplicas": count("readyReplicas"),
            "availableReplicas": available,
            "unavailableReplicas": max(0, count("replicas") - available),
            "conditions": [availability, progressing],
        },
    )
