"""The persistent volume binder with ``WaitForFirstConsumer`` (EBS's mode): a Pending claim is provisioned once
a pod using it is bound to a node, as a PersistentVolume pinned to that node's zone, and bound to it; the
scheduler then keeps the claim's later pods in that zone. Claims of an ``Immediate`` class, or of none, are
provisioned at once, in no zone."""

from __future__ import annotations

from autoscaler.apis.v1 import labels as wk
from autoscaler_dev.world.controllers.common import Context, Obj

SELECTED_NODE = "volume.kubernetes.io/selected-node"


def _consumers(pods: list[Obj]) -> dict[tuple[str, str], str]:
    """(namespace, claim) -> the node of a bound pod that uses it."""
    found: dict[tuple[str, str], str] = {}
    for pod in pods:
        node = pod["spec"].get("nodeName")
        for volume in pod["spec"].get("volumes") or ():
            claim = (volume.get("persistentVolumeClaim") or {}).get("claimName")
            if claim and node:
                found[(pod["metadata"]["namespace"], claim)] = str(node)
    return found


def reconcile(ctx: Context, claims: list[Obj], pods: list[Obj], nodes: list[Obj], classes: list[Obj]) -> None:
    modes = {c["metadata"]["name"]: c.get("volumeBindingMode", "Immediate") for c in classes}
    zones = {n["metadata"]["name"]: (n["metadata"].get("labels") or {}).get(wk.LABEL_ZONE) for n in nodes}
    consumers = _consumers(pods)
    for claim in claims:
        if (claim.get("status") or {}).get("phase") == "Bound" or claim["spec"].get("volumeName"):
            continue
        namespace, name = claim["metadata"]["namespace"], claim["metadata"]["name"]
        node = consumers.get((namespace, name))
        waits = modes.get(str(claim["spec"].get("storageClassName") or ""), "Immediate") == "WaitForFirstConsumer"
        if waits and node is None:
            continue
        zone = zones.get(node or "")
        volume = f"pvc-{claim['metadata']['uid']}"
        spec: Obj = {
            "capacity": {
                "storage": ((claim["spec"].get("resources") or {}).get("requests") or {}).get("storage", "1Gi")
            },
            "accessModes": claim["spec"].get("accessModes") or ["ReadWriteOnce"],
            "claimRef": {
                "kind": "PersistentVolumeClaim",
                "namespace": namespace,
                "name": name,
                "uid": claim["metadata"]["uid"],
            },
            "storageClassName": claim["spec"].get("storageClassName") or "",
            "persistentVolumeReclaimPolicy": "Delete",
        }
        if zone:
            term = {"matchExpressions": [{"key": wk.LABEL_ZONE, "operator": "In", "values": [zone]}]}
            spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [term]}}
        ctx.kube.create(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {"name": volume},
                "spec": spec,
                "status": {"phase": "Bound"},
            }
        )
        bound = {**claim, "spec": {**claim["spec"], "volumeName": volume}}
        if node:
            bound["metadata"] = {
                **claim["metadata"],
                "annotations": {**(claim["metadata"].get("annotations") or {}), SELECTED_NODE: node},
            }
        ctx.kube.apply(
            {**bound, "status": {"phase": "Bound", "accessModes": spec["accessModes"], "capacity": spec["capacity"]}}
        )
