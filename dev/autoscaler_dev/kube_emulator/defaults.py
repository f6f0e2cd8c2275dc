"""The API server's defaulting of the built-in kinds the workload controllers read: a new Pod is Pending, a
Deployment or StatefulSet without replicas has one, a Job without completions runs one pod. Only fields
that change what a controller or ``kubectl`` shows are defaulted (the API server defaults many more)."""

from __future__ import annotations

from typing import Any

from autoscaler_dev.kube_emulator.resources import Obj, ResourceType

_SPEC_DEFAULTS: dict[str, dict[str, Any]] = {
    "deployments.apps": {
        "replicas": 1,
        "revisionHistoryLimit": 10,
        "progressDeadlineSeconds": 600,
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
    },
    "replicasets.apps": {"replicas": 1},
    "statefulsets.apps": {
        "replicas": 1,
        "podManagementPolicy": "OrderedReady",
        "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
    },
    "jobs.batch": {"parallelism": 1, "backoffLimit": 6, "completionMode": "NonIndexed"},
    "pods": {
        "restartPolicy": "Always",
        "schedulerName": "default-scheduler",
        "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst",
    },
}


def default_builtin(operation: str, resource: ResourceType, old: Obj | None, new: Obj) -> Obj:
    """An admission step: fill the defaults of a new object (what a client sent always wins)."""
    defaults = _SPEC_DEFAULTS.get(resource.key)
    if operation != "CREATE" or defaults is None:
        return new
    spec = {**defaults, **(new.get("spec") or {})}
    if resource.key == "jobs.batch":
        spec.setdefault("completions", spec["parallelism"])
    new = {**new, "spec": spec}
    if resource.key == "pods" and not (new.get("status") or {}).get("phase"):
        new["status"] = {**(new.get("status") or {}), "phase": "Pending"}
    return new
