"""A scenario's workloads as the world holds them: API objects (a Deployment, StatefulSet, ReplicaSet or Job)
whose controllers in ``controllers`` keep their pods, exactly as for one applied with kubectl; the scenario's
``scale`` action edits their replicas."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from autoscaler.kube.objects import Body, Pod
from autoscaler.workloads import WORKLOAD_KINDS
from autoscaler_dev.kube_emulator.emulator import KubeEmulator
from autoscaler_dev.kube_emulator.selectors import selector_from_label_selector
from autoscaler_dev.world.controllers.common import controller_of


@dataclass
class Workload:
    api_version: str
    kind: str
    namespace: str
    name: str
    template: dict[str, Any]  # the pod template (for the observer's spread figures)
    selects: Callable[[Mapping[str, Any]], bool]
    scaled_down: bool = False  # its replicas were lowered at some point (Kubernetes does not rebalance after that)

    @classmethod
    def create(cls, kube: KubeEmulator, manifest: Mapping[str, Any]) -> Workload:
        kind = str(manifest.get("kind"))
        if kind not in WORKLOAD_KINDS - {"Pod"}:
            raise ValueError(f"a scenario workload is a Deployment, ReplicaSet, StatefulSet or Job, not {kind}")
        view = Body(manifest)
        api_version = str(manifest.get("apiVersion") or ("batch/v1" if kind == "Job" else "apps/v1"))
        namespace = view.namespace or "default"
        body = {**manifest, "apiVersion": api_version, "metadata": {**view.metadata, "namespace": namespace}}
        created = kube.create(body)
        spec = created.get("spec") or {}
        uid = created["metadata"]["uid"]
        selects = (
            selector_from_label_selector(spec["selector"])
            if spec.get("selector")
            else lambda pod: (controller_of(pod) or {}).get("uid") == uid
        )
        return cls(api_version, kind, namespace, str(view.metadata["name"]), dict(spec.get("template") or {}), selects)

    def owns(self, pod: Mapping[str, Any]) -> bool:
        return Pod(pod).namespace == self.namespace and bool(self.selects(pod))

    def scale(self, kube: KubeEmulator, replicas: int) -> None:
        current = kube.get(self.api_version, self.kind, self.name, self.namespace)
        if current is not None:
            self.scaled_down = self.scaled_down or replicas < int(current["spec"].get("replicas", 1))
            kube.apply({**current, "spec": {**current["spec"], "replicas": replicas}})
