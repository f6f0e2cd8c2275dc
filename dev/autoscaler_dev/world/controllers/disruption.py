"""The disruption controller: a PodDisruptionBudget's status from the pods it selects, with the expected count
taken from their controllers' scale (a Deployment's, ReplicaSet's or StatefulSet's replicas) as the controller
takes it, and the live count for pods with no such controller when the budget is an integer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from autoscaler_dev.kube_emulator.eviction import desired_healthy
from autoscaler_dev.kube_emulator.selectors import selector_from_label_selector
from autoscaler_dev.world.controllers.common import Context, Obj, condition, controller_of, ready, write_status


def _expected(pods: list[Obj], scales: Mapping[str, Obj]) -> int:
    """Sum of the replicas of the controllers of ``pods`` (each counted once); a pod with none counts itself."""
    counted: dict[str, int] = {}
    loose = 0
    for pod in pods:
        owner = controller_of(pod)
        workload = scales.get(str((owner or {}).get("uid")))
        if workload is None:
            loose += 1
            continue
        parent = scales.get(str((controller_of(workload) or {}).get("uid")))  # a Deployment's ReplicaSet
        top = parent or workload
        counted[top["metadata"]["uid"]] = int((top.get("spec") or {}).get("replicas", 1))
    return sum(counted.values()) + loose


def reconcile(ctx: Context, budget: Obj, pods: list[Obj], scales: Mapping[str, Obj]) -> None:
    namespace = budget["metadata"].get("namespace", "default")
    selects = selector_from_label_selector((budget.get("spec") or {}).get("selector"))
    covered = [
        p
        for p in pods
        if p["metadata"].get("namespace") == namespace and selects(p) and not p["metadata"].get("deletionTimestamp")
    ]
    expected = _expected(covered, scales)
    healthy = sum(ready(p) for p in covered)
    desired = desired_healthy(budget, expected)
    allowed = max(0, healthy - desired)
    now = ctx.stamp()
    status: dict[str, Any] = {
        "observedGeneration": budget["metadata"].get("generation", 1),
        "expectedPods": expected,
        "currentHealthy": healthy,
        "desiredHealthy": desired,
        "disruptionsAllowed": allowed,
        "conditions": [
            {
                k: v
                for k, v in condition(
                    "DisruptionAllowed",
                    allowed > 0,
                    "SufficientPods" if allowed > 0 else "InsufficientPods",
                    "",
                    now,
                ).items()
                if k != "lastUpdateTime"
            }
        ],
    }
    write_status(ctx, budget, status)
