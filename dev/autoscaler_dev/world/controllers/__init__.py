"""Kubernetes' controller manager as far as workloads go, for the embedded world: Deployments, ReplicaSets,
StatefulSets, DaemonSets and Jobs keep their pods, claims are bound to volumes, budgets get their status.
Scenario workloads and whatever ``kubectl apply`` sends go through the same controllers. Each ``step`` reads
the cluster once and lets every controller act, as their informers would between two resyncs."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from autoscaler_dev.kube_emulator.emulator import KubeEmulator
from autoscaler_dev.world.controllers import daemonset, deployment, disruption, job, replicaset, statefulset, volumes
from autoscaler_dev.world.controllers.common import Context


class ControllerManager:
    def __init__(self, kube: KubeEmulator, now: Callable[[], datetime]) -> None:
        self.ctx = Context(kube, now)

    def step(self) -> None:
        kube, ctx = self.ctx.kube, self.ctx
        for item in kube.list("apps/v1", "Deployment"):
            deployment.reconcile(ctx, item, kube.list("apps/v1", "ReplicaSet", item["metadata"]["namespace"]))
        pods = kube.list("v1", "Pod")
        for item in kube.list("apps/v1", "ReplicaSet"):
            replicaset.reconcile(ctx, item, pods)
        for item in kube.list("apps/v1", "StatefulSet"):
            statefulset.reconcile(ctx, item, pods)
        nodes = kube.list("v1", "Node")
        for item in kube.list("apps/v1", "DaemonSet"):
            daemonset.reconcile(ctx, item, pods, nodes)
        for item in kube.list("batch/v1", "Job"):
            job.reconcile(ctx, item, pods)
        pods = kube.list("v1", "Pod")
        claims = kube.list("v1", "PersistentVolumeClaim")
        if claims:
            volumes.reconcile(ctx, claims, pods, nodes, kube.list("storage.k8s.io/v1", "StorageClass"))
        budgets = kube.list("policy/v1", "PodDisruptionBudget")
        if budgets:
            scales = {
                o["metadata"]["uid"]: o
                for kind in ("Deployment", "ReplicaSet", "StatefulSet")
                for o in kube.list("apps/v1", kind)
            }
            for item in budgets:
                disruption.reconcile(ctx, item, pods, scales)
