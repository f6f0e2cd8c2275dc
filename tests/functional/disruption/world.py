"""A cluster for the disruption function's end-to-end tests: the provisioner world (moto, the Kubernetes API
emulator, the real provisioner handler) plus the real disruption, nodeclass and termination handlers, each invoked
as Lambda would with a container runtime of its own. Only the disruption runtime's clock is shifted (``advance``): the
provisioner's FIFO skip rule compares event times with real time, so its clock must stay real."""

from __future__ import annotations

import contextlib
import copy
import io
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from types import ModuleType
from typing import Any

import pytest

from autoscaler import runtime
from autoscaler.apis.resources import parse_resources
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.common import Condition
from autoscaler.apis.v1.conditions import get_condition
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler_dev.harness import Context, load_handler
from autoscaler_dev.world import kubelet
from autoscaler_dev.world.aws_world import ACCOUNT, KUBERNETES_VERSION, REGION, AWSWorld
from tests.functional.provisioner.world import ProvisionerWorld
from tests.support.metrics import emf_records

AL2023_X86 = (
    f"/aws/service/eks/optimized-ami/{KUBERNETES_VERSION}/amazon-linux-2023/x86_64/standard/recommended/image_id"
)


def scheduled_event(rule: str) -> dict[str, Any]:
    return {
        "version": "0",
        "id": "7d1c2f0a-4b1e-4c57-9a53-0e1f4b7d2c11",
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": ACCOUNT,
        "time": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": REGION,
        "resources": [f"arn:aws:events:{REGION}:{ACCOUNT}:rule/{rule}"],
        "detail": {},
    }


@dataclass
class DisruptionWorld:
    cluster: ProvisionerWorld
    disruption_handler: ModuleType
    termination_handler: ModuleType
    nodeclass_handler: ModuleType
    provisioning: runtime.Runtime
    disruption: runtime.Runtime
    terminating: runtime.Runtime
    offset: timedelta = timedelta(0)  # how far the disruption function's clock runs ahead of real time
    emf: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    @contextlib.contextmanager
    def start(cls, aws: AWSWorld, monkeypatch: pytest.MonkeyPatch) -> Iterator[DisruptionWorld]:
        with ProvisionerWorld.start(aws, monkeypatch) as cluster:
            # Every runtime reads the provisioner world's environment, its few instance types included: a
            # replacement must be launchable from the provisioner's catalogue.
            holder: list[DisruptionWorld] = []
            world = cls(
                cluster,
                load_handler("disruption"),
                load_handler("termination"),
                load_handler("nodeclass"),
                provisioning=runtime.Runtime.build(),
                disruption=runtime.Runtime.build(clock=lambda: datetime.now(UTC) + holder[0].offset),
                terminating=runtime.Runtime.build(),
            )
            holder.append(world)
            yield world

    @property
    def kube(self) -> Any:
        return self.cluster.kube

    @property
    def pool(self) -> str:
        return self.cluster.pool

    def advance(self, delta: timedelta) -> None:
        self.offset += delta

    # --- the cluster -----------------------------------------------------------------------------------
    def setup(
        self,
        *,
        instance_types: Sequence[str] = ("m5.large",),
        disruption: Mapping[str, Any] | None = None,
    ) -> None:
        """The provisioner world's EC2NodeClass and NodePool, the pool narrowed to ``instance_types`` (so each
        test knows how pods pack) and given ``disruption``, before any NodeClaim exists (so nothing drifts)."""
        self.cluster.setup()
        pool = self.nodepool()
        pool["spec"]["template"]["spec"]["requirements"].append(
            {"key": wk.LABEL_INSTANCE_TYPE, "operator": "In", "values": list(instance_types)}
        )
        pool["spec"]["disruption"] = {"consolidateAfter": "Never", "budgets": [{"nodes": "100%"}], **(disruption or {})}
        self.kube.apply(pool)

    def nodepool(self) -> dict[str, Any]:
        found = copy.deepcopy(self.kube.get(wk.API_VERSION, "NodePool", self.pool))  # get shares the store's dicts
        assert found is not None
        del found["metadata"]["resourceVersion"]
        return dict(found)

    def edit_nodepool(self, **disruption: Any) -> None:
        pool = self.nodepool()
        pool["spec"]["disruption"] = {**pool["spec"]["disruption"], **disruption}
        self.kube.apply(pool)

    def provision(self, pods: Sequence[tuple[str, str, str]]) -> dict[str, str]:
        """Pending pods (name, cpu, memory) -> the provisioner's NodeClaims -> instances -> joined, initialized
        nodes, each pod bound to one. Returns pod -> node."""
        for name, cpu, memory in pods:
            self.cluster.pending_pod(name, cpu, memory, labels={"app": name})
        self.provisioner_pass()
        self.join_and_initialize()
        return self.bind_first_fit([name for name, _, _ in pods])

    def provisioner_pass(self) -> list[dict[str, Any]]:
        runtime.install(self.provisioning)
        self.cluster.sweep()
        results = self.cluster.drain()
        self._fleet_security_groups()
        return results

    def _fleet_security_groups(self) -> None:
        """moto's CreateFleet ignores the launch template's security groups (a known gap, see aws_world); give
        each instance the class's group, as EC2 would have, or every node would drift (SecurityGroupDrift)."""
        ec2 = self.cluster.aws.client("ec2")
        for instance in self.instances():
            if not instance.get("SecurityGroups"):
                ec2.modify_instance_attribute(
                    InstanceId=instance["InstanceId"], Groups=[self.cluster.aws.security_group]
                )

    def join_and_initialize(self) -> list[str]:
        """Every launched, unregistered NodeClaim's kubelet joins; the provisioner then registers and
        initializes them."""
        joined = self.cluster.join_all()
        if joined:
            self.provisioner_pass()
        return joined

    def bind_first_fit(self, pods: Sequence[str]) -> dict[str, str]:
        """Bind each pod to the first Ready node with room for its requests (the kube-scheduler's part; the
        provisioner's nominations are rate-limited events, so they cannot be relied on for every pod)."""
        placed = {}
        for name in pods:
            pod = self.kube.get("v1", "Pod", name)
            assert pod is not None
            node = next(
                (n for n in self.schedulable_nodes() if fits(n, [*self.pods_on(n["metadata"]["name"]), pod])), None
            )
            assert node is not None, f"no node has room for pod {name}"
            kubelet.bind(self.kube, pod, node["metadata"]["name"])
            placed[name] = node["metadata"]["name"]
        return placed

    def schedulable_nodes(self) -> list[dict[str, Any]]:
        """Nodes without NoSchedule taints (disrupted ones included), not being deleted, by name."""
        nodes = [
            n
            for n in self.kube.list("v1", "Node")
            if not n["metadata"].get("deletionTimestamp")
            and not any(t.get("effect") in ("NoSchedule", "NoExecute") for t in n["spec"].get("taints") or ())
        ]
        return sorted(nodes, key=lambda n: n["metadata"]["name"])

    def running_pod(self, name: str, node: str, cpu: str, memory: str, labels: Mapping[str, str]) -> dict[str, Any]:
        """A pod a ReplicaSet owns, running on ``node``."""
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": "default",
                "labels": dict(labels),
                "ownerReferences": [
                    {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "app", "uid": "rs-uid", "controller": True}
                ],
            },
            "spec": {
                "nodeName": node,
                "containers": [
                    {"name": "app", "image": "app", "resources": {"requests": {"cpu": cpu, "memory": memory}}}
                ],
            },
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
        }
        return self.kube.create(pod)

    def shrink(self, placed: Mapping[str, str], cpu: str = "100m", memory: str = "256Mi") -> None:
        """The workload scales its requests down: each pod is replaced by a small one on the same node."""
        for name, node in placed.items():
            pod = self.kube.get("v1", "Pod", name)
            assert pod is not None
            self.kube.delete("v1", "Pod", name)
            self.running_pod(name, node, cpu, memory, pod["metadata"].get("labels") or {})

    def pods_on(self, node: str) -> list[dict[str, Any]]:
        return [p for p in self.kube.list("v1", "Pod") if p["spec"].get("nodeName") == node]

    def nodeclaims(self) -> list[NodeClaim]:
        return self.cluster.nodeclaims()

    def nodeclaim(self, name: str) -> NodeClaim | None:
        found = self.kube.get(wk.API_VERSION, "NodeClaim", name)
        return NodeClaim.model_validate(found) if found else None

    def node(self, claim: NodeClaim) -> dict[str, Any]:
        assert claim.status and claim.status.node_name
        found = self.kube.get("v1", "Node", claim.status.node_name)
        assert found is not None
        return found

    def instances(self) -> list[dict[str, Any]]:
        return self.cluster.instances()

    # --- the functions ---------------------------------------------------------------------------------
    def disrupt(self) -> dict[str, Any]:
        """One pass of the disruption function (its 5-minute schedule)."""
        runtime.install(self.disruption)
        return self._invoke(self.disruption_handler, scheduled_event("disruption"), "disruption")

    def terminate(self, passes: int = 5) -> dict[str, dict[str, Any]]:
        """Termination sweeps until no NodeClaim is terminating. Returns the pods it evicted, by name."""
        before = {p["metadata"]["name"]: p for p in self.kube.list("v1", "Pod")}
        runtime.install(self.terminating)
        for _ in range(passes):
            if not any(c.metadata.deletion_timestamp for c in self.nodeclaims()):
                break
            self._invoke(self.termination_handler, scheduled_event("termination-sweep"), "termination")
        assert not any(c.metadata.deletion_timestamp for c in self.nodeclaims()), "termination did not finish"
        return {name: pod for name, pod in before.items() if self.kube.get("v1", "Pod", name) is None}

    def reschedule(self, evicted: Mapping[str, dict[str, Any]], onto: str) -> None:
        """What a ReplicaSet and the kube-scheduler do with evicted pods: the same pods again, on ``onto``."""
        for name, pod in evicted.items():
            requests = pod["spec"]["containers"][0]["resources"]["requests"]
            self.running_pod(name, onto, requests["cpu"], requests["memory"], pod["metadata"].get("labels") or {})

    def resolve_nodeclasses(self) -> dict[str, Any]:
        """One pass of the nodeclass function, in a fresh container (no AMI cache from an earlier pass)."""
        runtime.install(runtime.Runtime.build())
        try:
            return self._invoke(self.nodeclass_handler, scheduled_event("nodeclass"), "nodeclass")
        finally:
            runtime.install(None)

    def _invoke(self, handler: ModuleType, event: dict[str, Any], function: str) -> dict[str, Any]:
        printed = io.StringIO()
        try:
            with contextlib.redirect_stdout(printed):
                result: dict[str, Any] = handler.handler(event, Context(function))
        finally:
            self.emf += emf_records(printed.getvalue())
        return result


def condition(claim: NodeClaim | None, kind: str) -> Condition | None:
    return get_condition(claim.status.conditions if claim and claim.status else None, kind)


def requested(pods: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    total = parse_resources({"cpu": "0", "memory": "0"})
    for pod in pods:
        asked = parse_resources(pod["spec"]["containers"][0]["resources"]["requests"])
        total = {k: total.get(k, 0) + asked.get(k, 0) for k in {*total, *asked}}
    return total


def fits(node: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]) -> bool:
    """The pods' requests fit the node's allocatable CPU and memory."""
    allocatable = parse_resources(node["status"]["allocatable"])
    asked = requested(pods)
    return all(asked.get(k, 0) <= allocatable.get(k, 0) for k in ("cpu", "memory"))
