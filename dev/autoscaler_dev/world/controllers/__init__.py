"""Kubernetes' controller manager as far as workloads go, for the embedded world: Deployments, ReplicaSets,
StatefulSets, DaemonSets and Jobs keep their pods, claims are bound to volumes, budgets get their status.
Scenario workloads and whatever ``kubectl apply`` sends go through the same controllers. Each ``step`` reads
the cluster once and lets every controller act, as their informers would between two resyncs."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from autoscaler_dev.kube_emulator import authentication as authn
from autoscaler_dev.kube_emulator.emulator import KubeEmulator
from autoscaler_dev.kube_emulator.enforcement import ActingAs, forbidden_skipped
from autoscaler_dev.world.controllers import daemonset, deployment, disruption, job, replicaset, statefulset, volumes
from autoscaler_dev.world.controllers.common import Context
from autoscaler_dev.world.kube_access import CONTROLLER_MANAGER, controller


class ControllerManager:
    """Reads as kube-controller-manager's shared informers (``system:kube-controller-manager``); each controller
    writes with its own service account, and a refused write (counted by the gate) skips that object this step."""

    def __init__(self, kube: KubeEmulator, now: Callable[[], datetime]) -> None:
        def context(account: str) -> Context:
            return Context(
                ActingAs.of(kube, controller(account)), now, lambda node: ActingAs.of(kube, authn.node(node))
            )

        self.informers = ActingAs.of(kube, CONTROLLER_MANAGER)
        self.deployments = context("deployment-controller")
        self.replicasets = context("replicaset-controller")
        self.statefulsets = context("statefulset-controller")
        self.daemonsets = context("daemon-set-controller")
        self.jobs = context("job-controller")
        self.volumes = context("persistent-volume-binder")
        self.budgets = context("disruption-controller")

    def step(self) -> None:
        read = self.informers.list
        for item in read("apps/v1", "Deployment"):
            replicasets = read("apps/v1", "ReplicaSet", item["metadata"]["namespace"])
            _reconcile(deployment.reconcile, self.deployments, item, replicasets)
        pods = read("v1", "Pod")
        for item in read("apps/v1", "ReplicaSet"):
            _reconcile(replicaset.reconcile, self.replicasets, item, pods)
        for item in read("apps/v1", "StatefulSet"):
            _reconcile(statefulset.reconcile, self.statefulsets, item, pods)
        nodes = read("v1", "Node")
        for item in read("apps/v1", "DaemonSet"):
            _reconcile(daemonset.reconcile, self.daemonsets, item, pods, nodes)
        for item in read("batch/v1", "Job"):
            _reconcile(job.reconcile, self.jobs, item, pods)
        pods = read("v1", "Pod")
        claims = read("v1", "PersistentVolumeClaim")
        if claims:
            _reconcile(volumes.reconcile, self.volumes, claims, pods, nodes, read("storage.k8s.io/v1", "StorageClass"))
        budgets = read("policy/v1", "PodDisruptionBudget")
        if budgets:
            scales = {
                o["metadata"]["uid"]: o
                for kind in ("Deployment", "ReplicaSet", "StatefulSet")
                for o in read("apps/v1", kind)
            }
            for item in budgets:
                _reconcile(disruption.reconcile, self.budgets, item, pods, scales)


def _reconcile(reconcile: Callable[..., None], ctx: Context, *arguments: Any) -> None:
    """One controller's pass over one object; a refused write (counted by the gate) ends that pass only."""
    with forbidden_skipped():
        reconcile(ctx, *arguments)
