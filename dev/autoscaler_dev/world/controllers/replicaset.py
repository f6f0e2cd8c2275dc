"""The ReplicaSet controller: ``spec.replicas`` pods from the template, the surplus deleted (unscheduled and
not ready first, then the newest), and the status counts ``kubectl`` and the Deployment controller read."""

from __future__ import annotations

from autoscaler_dev.world.controllers.common import Context, Obj, delete, owned, pod_from, ready, write_status


def _deletion_order(pod: Obj) -> tuple[bool, bool, str]:
    """As the ReplicaSet controller ranks pods to delete: unassigned, then not ready, then the newest."""
    created = str(pod["metadata"].get("creationTimestamp", ""))
    return (bool(pod["spec"].get("nodeName")), ready(pod), "".join(chr(255 - ord(c)) for c in created))


def reconcile(ctx: Context, replicaset: Obj, pods: list[Obj]) -> None:
    mine = owned(pods, replicaset)
    wanted = int(replicaset["spec"].get("replicas", 1))
    template = replicaset["spec"].get("template") or {}
    for _ in range(wanted - len(mine)):
        mine.append(ctx.kube.create(pod_from(template, replicaset)))
    if len(mine) > wanted:
        surplus = sorted(mine, key=_deletion_order)[: len(mine) - wanted]
        for pod in surplus:
            delete(ctx, pod)
        mine = [p for p in mine if p not in surplus]
    ready_count = sum(ready(p) for p in mine)
    write_status(
        ctx,
        replicaset,
        {
            "replicas": len(mine),
            "fullyLabeledReplicas": len(mine),
            "readyReplicas": ready_count,
            "availableReplicas": ready_count,
            "observedGeneration": replicaset["metadata"].get("generation", 1),
        },
    )
