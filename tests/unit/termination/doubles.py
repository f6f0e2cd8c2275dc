"""Small in-memory doubles of the Kubernetes API and of EC2 behind the Cluster and CloudProvider ports.

They keep the semantics the termination controller relies on: finalizers hold deleted objects (which get a
deletionTimestamp) until the last one is removed; pods deleted or evicted get a deletionTimestamp and stay
until the "kubelet" (the test) removes them; evictions honour PodDisruptionBudgets (matchLabels, integer
minAvailable / maxUnavailable); status writes use resourceVersion; EC2 instances go running ->
shutting-down -> terminated.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.conditions import timestamp
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.cloudprovider import NodeClaimNotFoundError
from autoscaler.kube.port import ConflictError, Event, EvictionOutcome, KubeObject, NotFoundError, ObjectRef

Clock = Callable[[], datetime]


def pod(
    name: str,
    node: str = "node-a",
    *,
    namespace: str = "default",
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    daemon: bool = False,
    critical: bool = False,
    static: bool = False,
    grace: int | None = 30,
    tolerations: Sequence[Mapping[str, str]] = (),
    volumes: Sequence[Mapping[str, Any]] = (),
    phase: str = "Running",
    deletion: str | None = None,
) -> dict[str, Any]:
    owners = []
    if daemon:
        owners.append({"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "ds", "uid": "ds-uid"})
    elif static:
        owners.append({"apiVersion": "v1", "kind": "Node", "name": node, "uid": "node-uid"})
    else:
        owners.append({"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "rs-uid"})
    spec: dict[str, Any] = {"nodeName": node, "tolerations": list(tolerations), "volumes": list(volumes)}
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    if critical:
        spec["priorityClassName"] = "system-node-critical"
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": f"uid-{name}",
        "labels": dict(labels or {}),
        "annotations": dict(annotations or {}),
        "ownerReferences": owners,
    }
    if deletion:
        metadata["deletionTimestamp"] = deletion
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, "status": {"phase": phase}}


def node(
    name: str = "node-a",
    provider_id: str = "aws:///us-east-1a/i-a",
    *,
    ready: bool = True,
    finalizers: Sequence[str] = (wk.FINALIZER_TERMINATION,),
    nodepool: str = "default",
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": f"uid-{name}",
            "labels": {wk.LABEL_NODEPOOL: nodepool},
            "finalizers": list(finalizers),
        },
        "spec": {"providerID": provider_id},
        "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def nodeclaim(
    name: str = "default-a",
    provider_id: str | None = "aws:///us-east-1a/i-a",
    *,
    node_name: str | None = "node-a",
    grace: str | None = None,
    nodepool: str = "default",
) -> NodeClaim:
    spec: dict[str, Any] = {
        "requirements": [],
        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
    }
    if grace:
        spec["terminationGracePeriod"] = grace
    return NodeClaim.model_validate(
        {
            "metadata": {
                "name": name,
                "uid": f"uid-{name}",
                "labels": {wk.LABEL_NODEPOOL: nodepool, wk.LABEL_CAPACITY_TYPE: "on-demand"},
                "finalizers": [wk.FINALIZER_TERMINATION],
            },
            "spec": spec,
            "status": {"providerID": provider_id, "nodeName": node_name} if provider_id else {},
        }
    )


def pdb(
    name: str,
    match_labels: Mapping[str, str],
    *,
    expected: int,
    max_unavailable: int | None = None,
    min_available: int | None = None,
    namespace: str = "default",
) -> dict[str, Any]:
    """A PodDisruptionBudget over a workload of ``expected`` replicas (its controller's scale)."""
    spec: dict[str, Any] = {"selector": {"matchLabels": dict(match_labels)}}
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    if min_available is not None:
        spec["minAvailable"] = min_available
    return {"metadata": {"name": name, "namespace": namespace}, "spec": spec, "status": {"expectedPods": expected}}


@dataclass
class FakeCluster:
    """The Cluster port over dictionaries, with the API server's deletion, finalizer and eviction rules."""

    clock: Clock
    nodeclaim_objects: dict[str, dict[str, Any]] = field(default_factory=dict)
    node_objects: dict[str, dict[str, Any]] = field(default_factory=dict)
    pod_objects: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    pdbs: list[dict[str, Any]] = field(default_factory=list)
    attachments: list[dict[str, Any]] = field(default_factory=list)
    claims: list[dict[str, Any]] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)  # every mutating call, in order, e.g. "evict default/web-1"
    write_times: list[datetime] = field(default_factory=list)  # when each of ``writes`` happened
    _version: int = 0

    # --- seeding and inspection ---------------------------------------------------------------------------
    def add(self, *objects: NodeClaim | dict[str, Any]) -> None:
        for obj in objects:
            if isinstance(obj, NodeClaim):
                data = obj.model_dump(by_alias=True, exclude_none=True)
                data["metadata"]["resourceVersion"] = self._next_version()
                self.nodeclaim_objects[obj.name] = data
            elif obj["kind"] == "Node":
                self.node_objects[obj["metadata"]["name"]] = copy.deepcopy(obj)
            else:
                self.pod_objects[(obj["metadata"]["namespace"], obj["metadata"]["name"])] = copy.deepcopy(obj)

    def nodeclaim(self, name: str) -> NodeClaim | None:
        data = self.nodeclaim_objects.get(name)
        return NodeClaim.model_validate(copy.deepcopy(data)) if data else None

    def pod(self, name: str, namespace: str = "default") -> dict[str, Any] | None:
        return self.pod_objects.get((namespace, name))

    def kubelet_removes_terminating_pods(self) -> list[str]:
        """What a kubelet does after a pod's grace period: the terminating pods disappear."""
        gone = [key for key, p in self.pod_objects.items() if p["metadata"].get("deletionTimestamp")]
        for key in gone:
            del self.pod_objects[key]
        return [name for _, name in gone]

    def written_at(self, prefix: str) -> list[datetime]:
        """When the writes starting with ``prefix`` happened."""
        return [t for w, t in zip(self.writes, self.write_times, strict=True) if w.startswith(prefix)]

    def _record(self, write: str) -> None:
        self.writes.append(write)
        self.write_times.append(self.clock())

    def _next_version(self) -> str:
        self._version += 1
        return str(self._version)

    def _store(self, kind: str) -> dict[Any, dict[str, Any]]:
        return {"NodeClaim": self.nodeclaim_objects, "Node": self.node_objects, "Pod": self.pod_objects}[kind]

    def _key(self, ref: ObjectRef) -> Any:
        return (ref.namespace or "default", ref.name) if ref.kind == "Pod" else ref.name

    def _get(self, ref: ObjectRef) -> dict[str, Any]:
        obj = self._store(ref.kind).get(self._key(ref))
        if obj is None:
            raise NotFoundError(f"{ref.kind} {ref.name} not found")
        return obj

    # --- reads --------------------------------------------------------------------------------------------
    def nodeclaims(self) -> list[NodeClaim]:
        return [NodeClaim.model_validate(copy.deepcopy(d)) for d in self.nodeclaim_objects.values()]

    def nodes(self) -> list[KubeObject]:
        return copy.deepcopy(list(self.node_objects.values()))

    def pods(self, node_name: str | None = None) -> list[KubeObject]:
        return copy.deepcopy([p for p in self.pod_objects.values() if node_name in (None, p["spec"].get("nodeName"))])

    def volume_attachments(self) -> list[KubeObject]:
        return copy.deepcopy(self.attachments)

    def persistent_volume_claims(self) -> list[KubeObject]:
        return copy.deepcopy(self.claims)

    def pod_disruption_budgets(self) -> list[KubeObject]:
        return copy.deepcopy(self.pdbs)

    # --- writes -------------------------------------------------------------------------------------------
    def write_status(self, obj: NodeClaim) -> NodeClaim:
        self._record(f"status NodeClaim/{obj.name}")
        stored = self._get(ObjectRef("NodeClaim", obj.name))
        if obj.metadata.resource_version != stored["metadata"]["resourceVersion"]:
            raise ConflictError(f"NodeClaim {obj.name} was modified")
        stored["status"] = obj.model_dump(by_alias=True, exclude_none=True).get("status", {})
        stored["metadata"]["resourceVersion"] = self._next_version()
        return NodeClaim.model_validate(copy.deepcopy(stored))

    def patch_metadata(
        self,
        ref: ObjectRef,
        *,
        labels: Mapping[str, str | None] | None = None,
        annotations: Mapping[str, str | None] | None = None,
        add_finalizers: Sequence[str] = (),
        remove_finalizers: Sequence[str] = (),
        owner_references: Sequence[Mapping[str, Any]] | None = None,
    ) -> None:
        self._record(f"patch {ref.kind}/{ref.name}" + (" -finalizer" if remove_finalizers else ""))
        metadata = self._get(ref)["metadata"]
        for key, values in (("labels", labels), ("annotations", annotations)):
            merged = {**(metadata.get(key) or {}), **(values or {})}
            metadata[key] = {k: v for k, v in merged.items() if v is not None}
        finalizers = [f for f in metadata.get("finalizers") or () if f not in remove_finalizers]
        metadata["finalizers"] = finalizers + [f for f in add_finalizers if f not in finalizers]
        metadata["resourceVersion"] = self._next_version()
        if metadata.get("deletionTimestamp") and not metadata["finalizers"]:
            del self._store(ref.kind)[self._key(ref)]

    def set_node_taints(self, node_name: str, taints: Sequence[Mapping[str, Any]]) -> None:
        self._record(f"taint Node/{node_name}")
        self._get(ObjectRef("Node", node_name))["spec"]["taints"] = [dict(t) for t in taints]

    def set_node_unschedulable(self, node_name: str, unschedulable: bool) -> None:
        self._get(ObjectRef("Node", node_name))["spec"]["unschedulable"] = unschedulable

    def delete(self, ref: ObjectRef, *, grace_period_seconds: int | None = None) -> bool:
        self._record(f"delete {ref.kind}/{ref.name}" + (f" grace={grace_period_seconds}" if ref.kind == "Pod" else ""))
        obj = self._store(ref.kind).get(self._key(ref))
        if obj is None:
            return False
        if ref.kind == "Pod":
            self._terminate_pod(obj, grace_period_seconds)
            return True
        if not obj["metadata"].get("finalizers"):
            del self._store(ref.kind)[self._key(ref)]
            return True
        obj["metadata"].setdefault("deletionTimestamp", timestamp(self.clock()))
        return True

    def evict(self, namespace: str, name: str) -> EvictionOutcome:
        self._record(f"evict {namespace}/{name}")
        target = self.pod_objects.get((namespace, name))
        if target is None:
            return EvictionOutcome.GONE
        for budget in self.pdbs:
            selected = budget["metadata"]["namespace"] == namespace and self._selects(budget, target)
            if selected and self._disruptions_allowed(budget) <= 0:
                return EvictionOutcome.BLOCKED
        self._terminate_pod(target, None)
        return EvictionOutcome.EVICTED

    def _terminate_pod(self, obj: dict[str, Any], grace_period_seconds: int | None) -> None:
        grace = (
            obj["spec"].get("terminationGracePeriodSeconds", 30)
            if grace_period_seconds is None
            else grace_period_seconds
        )
        obj["metadata"].setdefault("deletionTimestamp", timestamp(self.clock() + timedelta(seconds=grace)))
        obj["metadata"]["deletionGracePeriodSeconds"] = grace

    def _selects(self, budget: Mapping[str, Any], target: Mapping[str, Any]) -> bool:
        wanted = budget["spec"]["selector"]["matchLabels"]
        labels = target["metadata"].get("labels") or {}
        return all(labels.get(k) == v for k, v in wanted.items())

    def _disruptions_allowed(self, budget: Mapping[str, Any]) -> int:
        healthy = self.healthy(budget)
        if "minAvailable" in budget["spec"]:
            return healthy - int(budget["spec"]["minAvailable"])
        return int(budget["spec"]["maxUnavailable"]) - (budget["status"]["expectedPods"] - healthy)

    def healthy(self, budget: Mapping[str, Any]) -> int:
        """Pods the budget counts as available: selected, running and not terminating."""
        return sum(
            1
            for p in self.pod_objects.values()
            if self._selects(budget, p)
            and not p["metadata"].get("deletionTimestamp")
            and p["status"].get("phase") == "Running"
        )

    def record_event(self, event: Event) -> None:
        self.events.append(event)

    # Parts of the port the termination controller never calls.
    def nodepools(self) -> list[Any]:
        raise NotImplementedError

    def nodeclasses(self) -> list[Any]:
        raise NotImplementedError

    def create_nodeclaim(self, nodeclaim: NodeClaim) -> NodeClaim:
        raise NotImplementedError

    def pending_pods(self) -> list[KubeObject]:
        raise NotImplementedError

    def daemonsets(self) -> list[KubeObject]:
        raise NotImplementedError

    def persistent_volumes(self) -> list[KubeObject]:
        raise NotImplementedError


@dataclass
class FakeCloud:
    """EC2 as the CloudProvider port sees it: provider ID -> instance state."""

    states: dict[str, str] = field(default_factory=dict)
    # How many ``get`` calls a terminating instance stays "running" before EC2 reports it shutting down.
    shutdown_delay: int = 0
    calls: list[str] = field(default_factory=list)
    _pending_gets: dict[str, int] = field(default_factory=dict)

    def launch(self, provider_id: str) -> None:
        self.states[provider_id] = "running"

    def delete(self, nodeclaim: NodeClaim) -> None:
        provider_id = (nodeclaim.status.provider_id if nodeclaim.status else None) or ""
        self.calls.append(f"delete {provider_id}")
        if self.states.get(provider_id, "terminated") == "terminated":
            raise NodeClaimNotFoundError(f"instance {provider_id} already terminated")
        if self.states[provider_id] == "running":
            self._pending_gets[provider_id] = self.shutdown_delay
            self.states[provider_id] = "shutting-down" if self.shutdown_delay == 0 else "stopping"

    def get(self, provider_id: str) -> NodeClaim:
        self.calls.append(f"get {provider_id}")
        state = self.states.get(provider_id, "terminated")
        if state == "stopping":
            self._pending_gets[provider_id] -= 1
            if self._pending_gets[provider_id] < 0:
                state = self.states[provider_id] = "shutting-down"
        if state == "terminated":
            raise NodeClaimNotFoundError(f"instance {provider_id} not found")
        metadata: dict[str, Any] = {"name": provider_id}
        if state == "shutting-down":
            metadata["deletionTimestamp"] = "2000-01-01T00:00:00Z"
        return NodeClaim.model_validate(
            {
                "metadata": metadata,
                "spec": {
                    "requirements": [],
                    "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                },
                "status": {"providerID": provider_id},
            }
        )

    def terminate_outside(self, provider_id: str) -> None:
        """Someone else (a user, a spot reclaim) terminated the instance."""
        self.states[provider_id] = "terminated"

    def list(self) -> list[NodeClaim]:
        raise NotImplementedError

    def create(self, nodeclaim: NodeClaim) -> NodeClaim:
        raise NotImplementedError

    def instance_types(self, nodepool: Any) -> list[Any]:
        raise NotImplementedError

    def is_drifted(self, nodeclaim: NodeClaim) -> Any:
        raise NotImplementedError
