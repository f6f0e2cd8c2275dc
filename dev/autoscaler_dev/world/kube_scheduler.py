"""The embedded world's kube-scheduler: binds pending pods to Ready nodes where the scheduling core's predicates
place them (nominated pods onto their NodeClaim's node first), with ``system:kube-scheduler``'s credentials, and
marks what fits nowhere Unschedulable; each bound pod is started by its node's kubelet."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.conditions import timestamp
from autoscaler.controllers.state.inflight import nominated_in
from autoscaler.kube.objects import Body, Node, Pod
from autoscaler.scheduling import ClusterSnapshot, Scheduler
from autoscaler.workloads import UNSCHEDULABLE
from autoscaler_dev.kube_emulator.emulator import KubeEmulator
from autoscaler_dev.kube_emulator.enforcement import ActingAs, forbidden_skipped
from autoscaler_dev.world import kubelet

KubeObject = dict[str, Any]


def pending(pod: Mapping[str, Any]) -> bool:
    view = Pod(pod)
    return not view.node_name and not view.deleting


class KubeScheduler:
    def __init__(
        self,
        kube: KubeEmulator,
        scheduler: ActingAs,
        kubelet_of: Callable[[str], ActingAs],
        now: Callable[[], datetime],
    ) -> None:
        self.kube, self.scheduler, self.kubelet, self.now = kube, scheduler, kubelet_of, now

    def step(self) -> None:
        """Bind pending pods: first those nominated to a NodeClaim onto its node (the provisioner packed them there;
        kube-scheduler's scoring usually agrees), then the rest wherever the predicates allow."""
        waiting = [copy.deepcopy(p) for p in self.scheduler.list("v1", "Pod") if pending(p)]
        if not waiting:
            return
        ready = {Node(n).name: n for n in self.scheduler.list("v1", "Node") if _schedulable(n)}
        nominated = self._nominations(ready)
        groups: dict[str, list[KubeObject]] = {}
        for pod in waiting:
            groups.setdefault(nominated.get(str(Pod(pod).uid), ""), []).append(pod)
        unplaced: list[KubeObject] = []
        full = {name: _full(n) for name, n in ready.items()} if any(groups) else {}  # only for nominated groups
        for node, pods in sorted(groups.items(), key=lambda g: g[0] == ""):
            # Onto the nominated node only, but judged against every node (the others full): a spread or an
            # affinity counts the pods of all of them, as kube-scheduler's filters do.
            nodes = [ready[node], *(f for name, f in full.items() if name != node)] if node else list(ready.values())
            unplaced += self._bind(pods, nodes, mark_unschedulable=not node)
        if unplaced:
            self._bind(unplaced, list(ready.values()), mark_unschedulable=True)

    def _nominations(self, ready: Mapping[str, KubeObject]) -> dict[str, str]:
        """Pod UID -> the Ready node of the NodeClaim it was nominated to (the world's reading, not the scheduler's)."""
        by_provider = {Node(n).provider_id: name for name, n in ready.items()}
        found: dict[str, str] = {}
        for raw in self.kube.list(wk.API_VERSION, "NodeClaim"):
            claim = Body(raw)
            node = by_provider.get(str(claim.status.get("providerID") or ""))
            if node:
                found.update(dict.fromkeys(nominated_in(claim.annotations), node))
        return found

    def _bind(self, pods: list[KubeObject], nodes: list[KubeObject], *, mark_unschedulable: bool) -> list[KubeObject]:
        """Bind what fits on ``nodes``; mark the rest Unschedulable when asked; return the pods not bound."""
        scheduler = self.scheduler
        bound = [p for p in scheduler.list("v1", "Pod") if Pod(p).node_name]
        snapshot = ClusterSnapshot(
            nodepools=(),
            instance_types={},
            nodes=nodes,
            bound_pods=bound,
            persistent_volume_claims=scheduler.list("v1", "PersistentVolumeClaim"),
            persistent_volumes=scheduler.list("v1", "PersistentVolume"),
            storage_classes=scheduler.list("storage.k8s.io/v1", "StorageClass"),
        )
        result = Scheduler(snapshot).solve(pods)
        by_uid = {str(Pod(p).uid): p for p in pods}
        now = timestamp(self.now())
        for ref, where in result.placements.items():
            if where.kind == "node" and ref.uid in by_uid:
                with forbidden_skipped():  # the scheduler binds, then the node's kubelet starts the pod
                    kubelet.start(self.kubelet(where.name), scheduler.bind(by_uid.pop(ref.uid), where.name), now)
        if mark_unschedulable:
            for pod in by_uid.values():
                if not any(c.get("reason") == "Unschedulable" for c in Pod(pod).conditions):
                    pod["status"] = {"phase": "Pending", "conditions": [{**UNSCHEDULABLE, "lastTransitionTime": now}]}
                    with forbidden_skipped():
                        scheduler.replace(pod, {"status": pod["status"]}, "status")
        return list(by_uid.values())


def _full(node: KubeObject) -> KubeObject:
    """``node`` with room for no more pods: still a topology domain, never a place."""
    status = node.get("status") or {}
    return {**node, "status": {**status, "allocatable": {**(status.get("allocatable") or {}), "pods": "0"}}}


def _schedulable(node: Mapping[str, Any]) -> bool:
    """Ready, not being deleted, and (for Karpenter's nodes) initialized: where the kube-scheduler binds."""
    view = Node(node)
    managed = wk.LABEL_NODEPOOL in view.labels
    return view.ready and not view.deleting and (not managed or view.labels.get(wk.LABEL_INITIALIZED) == "true")
