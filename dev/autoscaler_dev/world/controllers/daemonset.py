"""The DaemonSet controller: one pod per node the template fits (node selector, required node affinity on
labels, taints tolerated, with the tolerations the controller adds to every daemon pod), placed on its node
as the controller's node affinity makes the scheduler do, and removed from nodes it no longer fits."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from autoscaler.kube.objects import Node
from autoscaler_dev.kube_emulator.selectors import selector_from_label_selector
from autoscaler_dev.world.controllers.common import Context, Obj, delete, owned, pod_from, ready, write_status

# What the DaemonSet controller adds to every daemon pod (kubernetes/pkg/controller/daemon/util).
DAEMON_TOLERATIONS = (
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
)


def _tolerates(tolerations: list[Mapping[str, Any]], taint: Mapping[str, Any]) -> bool:
    for toleration in tolerations:
        if toleration.get("effect") not in (None, "", taint.get("effect")):
            continue
        if toleration.get("operator") == "Exists" and toleration.get("key") in (None, "", taint.get("key")):
            return True
        if toleration.get("key") == taint.get("key") and toleration.get("value", "") == taint.get("value", ""):
            return True
    return False


def _term_matches(term: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    try:
        return selector_from_label_selector({"matchExpressions": term.get("matchExpressions") or []})(node)
    except KeyError:  # Gt / Lt: not a label selector operator; such a term is left to the scheduler
        return True


def fits(template: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    spec = template.get("spec") or {}
    labels = Node(node).labels
    if any(labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
        return False
    required = (
        ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
        or {}
    ).get("nodeSelectorTerms")
    if required and not any(_term_matches(term, node) for term in required):
        return False
    tolerations = [*(spec.get("tolerations") or ()), *DAEMON_TOLERATIONS]
    return all(_tolerates(tolerations, t) for t in Node(node).taints if t.get("effect") in ("NoSchedule", "NoExecute"))


def reconcile(ctx: Context, daemonset: Obj, pods: list[Obj], nodes: list[Obj]) -> None:
    template = daemonset["spec"].get("template") or {}
    mine = owned(pods, daemonset)
    by_node = {str(p["spec"].get("nodeName") or ""): p for p in mine}
    live = [n for n in nodes if not Node(n).deleting]
    wanted = {Node(n).name for n in live if fits(template, n)}
    for name in sorted(wanted - set(by_node)):
        pod = pod_from(template, daemonset)
        tolerations = pod["spec"].setdefault("tolerations", [])
        tolerations += [t for t in DAEMON_TOLERATIONS if t not in tolerations]
        pod["spec"]["nodeName"] = name
        by_node[name] = ctx.kube.create(pod)
    for name, pod in list(by_node.items()):
        if name not in wanted:
            delete(ctx, pod)
            del by_node[name]
    ready_count = sum(ready(p) for p in by_node.values())
    write_status(
        ctx,
        daemonset,
        {
            "observedGeneration": daemonset["metadata"].get("generation", 1),
            "desiredNumberScheduled": len(wanted),
            "currentNumberScheduled": len(by_node),
            "updatedNumberScheduled": len(by_node),
            "numberReady": ready_count,
            "numberAvailable": ready_count,
            "numberMisscheduled": 0,
        },
    )
