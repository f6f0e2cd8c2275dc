"""A cluster for the termination function's end-to-end tests: the Kubernetes API emulator and the moto world,
the real handler wired to both through its environment, one injected clock, and the events a kubelet, a
ReplicaSet or EC2 would produce meanwhile."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from moto.backends import get_backend
from moto.ec2.models.instances import Instance

from autoscaler import runtime
from autoscaler.apis.v1 import labels as wk
from autoscaler.kube.client import KubernetesCluster
from autoscaler_dev import checkout
from autoscaler_dev.harness import Context, InvocationDied, load_handler
from autoscaler_dev.kube_emulator.emulator import KubeEmulator
from autoscaler_dev.world.aws_world import ACCOUNT, CLUSTER, REGION, ZONES, AWSWorld
from tests.support import kube as k8s
from tests.support.metrics import emf_records, metric_values

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
SAMPLES = checkout.events_dir() / "forwarder"


def scheduled_event() -> dict[str, Any]:
    return {
        "version": "0",
        "id": "5f0e6a49-0d3c-4c48-9a2a-4d1b8c1e7a10",
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": ACCOUNT,
        "time": "2026-11-30T12:00:00Z",
        "region": REGION,
        "resources": [f"arn:aws:events:{REGION}:{ACCOUNT}:rule/termination-sweep"],
        "detail": {},
    }


@dataclass
class TerminationWorld:
    aws: AWSWorld
    kube: KubeEmulator
    handler: ModuleType
    now: datetime = T0
    samples: Path = SAMPLES
    instances: dict[str, str] = field(default_factory=dict)  # NodeClaim name -> instance id
    replicas: dict[str, dict[str, Any]] = field(default_factory=dict)  # pods we placed, by name
    emf: list[dict[str, Any]] = field(default_factory=list)  # every metric record the handler printed
    lagging: set[str] = field(default_factory=set)  # instance ids EC2 still describes as running
    evictions_left: int | None = None

    @classmethod
    @contextlib.contextmanager
    def start(cls, aws: AWSWorld, monkeypatch: pytest.MonkeyPatch) -> Iterator[TerminationWorld]:
        holder: list[TerminationWorld] = []
        with KubeEmulator(clock=lambda: holder[0].now if holder else T0) as kube:
            for name in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST"):
                monkeypatch.delenv(name, raising=False)
            environment = {
                "CLUSTER_NAME": CLUSTER,
                "AWS_REGION": REGION,
                "AWS_ENDPOINT_URL": aws.endpoint,
                "CLUSTER_ENDPOINT": kube.url,  # plain http: the handler connects without EKS auth
                "ISOLATED_VPC": "true",
                "POWERTOOLS_TRACE_DISABLED": "true",
            }
            for name, value in environment.items():
                monkeypatch.setenv(name, value)
            world = cls(aws, kube, load_handler("termination"))
            holder.append(world)
            world.new_execution_environment()
            monkeypatch.setattr(KubernetesCluster, "evict", world._dying(KubernetesCluster.evict))
            monkeypatch.setattr(Instance, "terminate", world._lagging(Instance.terminate))
            yield world
            runtime.install(None)

    # --- time and invocations ------------------------------------------------------------------------
    def tick(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)

    def set_time(self, seconds_after_t0: float) -> None:
        self.now = T0 + timedelta(seconds=seconds_after_t0)

    def invoke(self, event: dict[str, Any]) -> dict[str, Any]:
        printed = io.StringIO()
        try:
            with contextlib.redirect_stdout(printed):
                result: dict[str, Any] = self.handler.handler(event, Context.of("termination"))
        finally:
            self.emf += emf_records(printed.getvalue())
        return result

    def new_execution_environment(self) -> None:
        """A new container: the runtime the handler builds (settings from the environment, both adapters, and
        a cloud provider that reads no EC2NodeClass), with the test's clock."""
        runtime.install(runtime.Runtime.build(clock=lambda: self.now))

    def metric(self, name: str, **dimensions: str) -> list[float]:
        return metric_values(self.emf, name, **dimensions)

    def forwarder_event(self, kind: str, name: str) -> dict[str, Any]:
        event: dict[str, Any] = json.loads((self.samples / f"{kind.lower()}-deleting.json").read_text())
        event["detail"]["object"]["name"] = name
        return event

    # --- the cluster -----------------------------------------------------------------------------------
    def pod(
        self,
        name: str,
        *,
        labels: Mapping[str, str] | None = None,
        annotations: Mapping[str, str] | None = None,
        grace: int = 30,
        daemon: bool = False,
    ) -> dict[str, Any]:
        body = k8s.pod(name, labels=dict(labels or {}), owner_kind="DaemonSet" if daemon else "ReplicaSet")
        body["metadata"]["annotations"] = dict(annotations or {})
        body["spec"]["terminationGracePeriodSeconds"] = grace
        return body

    def pdb(self, name: str, selector: dict[str, str], *, max_unavailable: int, expected: int) -> dict[str, Any]:
        """A budget over a workload of ``expected`` replicas (what the disruption controller reads from its scale)."""
        return {**k8s.pdb(name, selector, max_unavailable=max_unavailable), "status": {"expectedPods": expected}}

    def node_with_claim(
        self, name: str, pods: list[dict[str, Any]], *, grace: str | None = None, registered: bool = True
    ) -> None:
        """An instance launched for NodeClaim ``name``, and (when registered) its Node ``node-<name>`` with pods."""
        zone = ZONES[0]
        instance_id = self._launch(name, zone)
        self.instances[name] = instance_id
        provider_id = f"aws:///{zone}/{instance_id}"
        node_name = f"node-{name}"
        spec: dict[str, Any] = {
            "requirements": [{"key": wk.LABEL_ARCH, "operator": "In", "values": ["amd64"]}],
            "nodeClassRef": {"group": wk.AWS_GROUP, "kind": "EC2NodeClass", "name": "default"},
        }
        if grace:
            spec["terminationGracePeriod"] = grace
        status: dict[str, Any] = {"providerID": provider_id}
        if registered:
            status["nodeName"] = node_name
        labels = {wk.LABEL_NODEPOOL: "default", wk.LABEL_CAPACITY_TYPE: "on-demand"}
        self.kube.create(
            {
                "apiVersion": wk.API_VERSION,
                "kind": "NodeClaim",
                "metadata": {"name": name, "labels": labels, "finalizers": [wk.FINALIZER_TERMINATION]},
                "spec": spec,
                "status": status,
            }
        )
        if not registered:
            return
        node = k8s.node(node_name, **{wk.LABEL_NODEPOOL: "default"})
        node["metadata"]["finalizers"] = [wk.FINALIZER_TERMINATION]
        node["spec"]["providerID"] = provider_id
        self.kube.create(node)
        for pod in pods:
            pod["spec"]["nodeName"] = node_name
            self.replicas[pod["metadata"]["name"]] = pod
            self.kube.create(pod)

    def delete_nodeclaim(self, name: str) -> None:
        self.kube.delete(wk.API_VERSION, "NodeClaim", name)

    def node_not_ready(self, node_name: str) -> None:
        node = self.kube.get("v1", "Node", node_name)
        assert node is not None
        node["status"]["conditions"] = [{"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown"}]
        self.kube.apply(node)

    def pods_on(self, node_name: str) -> list[str]:
        pods = self.kube.list("v1", "Pod")
        return sorted(
            f"{p['metadata']['namespace']}/{p['metadata']['name']}"
            for p in pods
            if p["spec"].get("nodeName") == node_name
        )

    def healthy(self, selector: Mapping[str, str]) -> int:
        """Running, Ready, not terminating pods the selector matches: what a PDB counts."""
        return sum(
            1
            for p in self.kube.list("v1", "Pod")
            if all((p["metadata"].get("labels") or {}).get(k) == v for k, v in selector.items())
            and p["status"].get("phase") == "Running"
            and not p["metadata"].get("deletionTimestamp")
        )

    def reschedule_evicted(self, selector: Mapping[str, str], onto: str) -> None:
        """What a ReplicaSet and the scheduler do: each evicted replica comes back, Ready, on another node."""
        for name, pod in list(self.replicas.items()):
            labels = pod["metadata"].get("labels") or {}
            gone = self.kube.get("v1", "Pod", name) is None
            if gone and all(labels.get(k) == v for k, v in selector.items()):
                replacement = self.pod(f"{name}-r", labels=labels)
                replacement["spec"]["nodeName"] = onto
                self.kube.create(replacement)
                del self.replicas[name]

    # --- crashes -------------------------------------------------------------------------------------
    def die_after_evictions(self, count: int) -> None:
        self.evictions_left = count

    def _dying(self, evict: Any) -> Any:
        def wrapper(cluster: KubernetesCluster, namespace: str, name: str) -> Any:
            outcome = evict(cluster, namespace, name)
            if self.evictions_left is not None:
                self.evictions_left -= 1
                if self.evictions_left == 0:
                    self.evictions_left = None
                    raise InvocationDied("invocation died")
            return outcome

        return wrapper

    # --- EC2 -----------------------------------------------------------------------------------------
    def _launch(self, name: str, zone: str) -> str:
        tags = {
            f"{wk.TAG_CLUSTER_PREFIX}{CLUSTER}": "owned",
            wk.TAG_CLUSTER_NAME: CLUSTER,
            wk.TAG_NODEPOOL: "default",
            wk.TAG_NODECLASS: "default",
            wk.TAG_NODECLAIM: name,
        }
        answer = self.aws.client("ec2").run_instances(
            ImageId=self.aws.images["al2023/x86_64/standard"],
            InstanceType="m5.large",
            MinCount=1,
            MaxCount=1,
            SubnetId=self.aws.subnets[zone],
            TagSpecifications=[{"ResourceType": "instance", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}],
        )
        return str(answer["Instances"][0]["InstanceId"])

    def instance_state(self, name: str) -> str:
        reservations = self.aws.client("ec2").describe_instances(InstanceIds=[self.instances[name]])["Reservations"]
        return str(reservations[0]["Instances"][0]["State"]["Name"])

    def terminate_outside(self, name: str) -> None:
        self.aws.client("ec2").terminate_instances(InstanceIds=[self.instances[name]])

    def ec2_lags_behind(self, name: str) -> None:
        """EC2 accepts TerminateInstances for this instance but keeps describing it running for a while."""
        self.lagging.add(self.instances[name])

    def ec2_reports(self, name: str, state: str) -> None:
        instance = get_backend("ec2")[ACCOUNT][REGION].get_instance(self.instances[name])
        instance._state.name = state
        self.lagging.discard(self.instances[name])

    def _lagging(self, terminate: Any) -> Any:
        def wrapper(instance: Instance) -> Any:
            result = terminate(instance)
            if instance.id in self.lagging:
                instance._state.name, instance._state.code = "running", 16
            return result

        return wrapper
