"""A small cluster for disruption tests: NodePools, Ready EC2NodeClasses, initialized NodeClaims with their Nodes,
pods bound to them, and a cloud that answers instance types and drift. In memory, no network."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.conditions import timestamp
from autoscaler.apis.v1.hashing import NODEPOOL_HASH_VERSION, nodepool_hash
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.apis.v1.nodepool import NodePool
from autoscaler.cloudprovider.errors import CloudProviderError
from autoscaler.cloudprovider.types import Drift, InstanceType
from autoscaler.cloudprovider.unavailable import InMemoryUnavailableOfferings
from autoscaler.cloudprovider.zonalshift import NoZonalShifts, ShiftedZones, ZonalShifts
from autoscaler.controllers.disruption import DisruptionController
from tests.support.memory_cluster import MemoryCluster
from tests.unit.controllers.provisioning_doubles import CATALOGUE, nodepool, ready_nodeclass

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
LONG_AGO = NOW - timedelta(days=2)
TYPES = {t.name: t for t in CATALOGUE}


@dataclass
class FakeCloud:
    """Instance types for every NodePool, the provider's drift per NodeClaim name, and ARC's zonal shifts (asked
    for every NodePool's offerings, as the provider asks where launches are decided)."""

    types: Sequence[InstanceType] = CATALOGUE
    drifts: dict[str, Drift | CloudProviderError] = field(default_factory=dict)
    zonal_shifts: ZonalShifts = field(default_factory=NoZonalShifts)

    def instance_types(self, nodepool: NodePool) -> list[InstanceType]:
        self.zonal_shifts.shifted_away()
        return list(self.types)

    def shifted_zones(self) -> ShiftedZones:
        return ShiftedZones.read(self.zonal_shifts)

    def drift_many(self, claims: Sequence[NodeClaim]) -> list[Drift | CloudProviderError | None]:
        return [self.drifts.get(c.name) for c in claims]


def condition(kind: str, at: datetime = LONG_AGO, status: str = "True", reason: str = "") -> dict[str, Any]:
    return {"type": kind, "status": status, "reason": reason or kind, "lastTransitionTime": timestamp(at)}


def node_and_claim(
    name: str,
    pool: NodePool,
    instance_type: str = "m5.xlarge",
    *,
    capacity_type: str = "on-demand",
    zone: str = "us-west-2a",
    created: datetime = LONG_AGO,
    annotations: dict[str, str] | None = None,
    ready: bool = True,
    **spec: Any,
) -> tuple[NodeClaim, dict[str, Any]]:
    it = TYPES[instance_type]
    labels = {
        wk.LABEL_NODEPOOL: pool.name,
        wk.LABEL_INSTANCE_TYPE: instance_type,
        wk.LABEL_CAPACITY_TYPE: capacity_type,
        wk.LABEL_ZONE: zone,
        wk.LABEL_ARCH: it.labels[wk.LABEL_ARCH],
        wk.LABEL_OS: "linux",
    }
    capacity = {"cpu": str(it.capacity["cpu"] // 1000), "memory": f"{it.capacity['memory'] // 2**20}Mi", "pods": "58"}
    provider_id = f"aws:///{zone}/i-{name}"
    claim = NodeClaim.model_validate(
        {
            "metadata": {
                "name": name,
                "uid": f"uid-{name}",
                "creationTimestamp": timestamp(created),
                "labels": labels,
                "annotations": {
                    wk.ANNOTATION_NODEPOOL_HASH: nodepool_hash(pool),
                    wk.ANNOTATION_NODEPOOL_HASH_VERSION: NODEPOOL_HASH_VERSION,
                    **(annotations or {}),
                },
                "finalizers": [wk.FINALIZER_TERMINATION],
            },
            "spec": {
                "requirements": [{"key": wk.LABEL_INSTANCE_TYPE, "operator": "In", "values": [instance_type]}],
                "nodeClassRef": {"group": wk.AWS_GROUP, "kind": "EC2NodeClass", "name": "default"},
                **spec,
            },
            "status": {
                "providerID": provider_id,
                "nodeName": f"node-{name}",
                "capacity": capacity,
                "allocatable": capacity,
                "conditions": [condition(c, created) for c in ("Launched", "Registered", "Initialized", "Ready")],
            },
        }
    )
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": f"node-{name}",
            "labels": {**labels, wk.LABEL_HOSTNAME: f"node-{name}", wk.LABEL_INITIALIZED: "true"},
        },
        "spec": {"providerID": provider_id},
        "status": {
            "capacity": capacity,
            "allocatable": capacity,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }
    return claim, node


def pod(name: str, node: str | None, cpu: str = "500m", memory: str = "1Gi", **metadata: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": f"uid-{name}",
            "creationTimestamp": timestamp(LONG_AGO),
            "ownerReferences": [{"kind": "ReplicaSet", "name": "web", "controller": True, "apiVersion": "apps/v1"}],
            **metadata,
        },
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": memory}}}]},
        "status": {
            "phase": "Running" if node else "Pending",
            "conditions": [
                {"type": "Ready", "status": "True"},
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": timestamp(LONG_AGO)},
            ],
        },
    }
    if node:
        body["spec"]["nodeName"] = node
    return body


def pool(name: str = "default", **spec: Any) -> NodePool:
    """A NodePool of on-demand nodes that consolidates underutilized nodes at once, budget 10%."""
    disruption = {
        "consolidateAfter": "0s",
        "consolidationPolicy": "WhenEmptyOrUnderutilized",
        **spec.pop("disruption", {}),
    }
    return nodepool(name, disruption=disruption, **spec)


@dataclass
class World:
    cluster: MemoryCluster
    cloud: FakeCloud
    now: datetime = NOW

    @classmethod
    def of(cls, *objects: Any, cloud: FakeCloud | None = None) -> World:
        cluster = MemoryCluster(ready_nodeclass(), *objects, clock=lambda: NOW)
        return cls(cluster, cloud or FakeCloud())

    def controller(self, **options: Any) -> DisruptionController:
        unavailable = InMemoryUnavailableOfferings(lambda: self.now)
        return DisruptionController(self.cluster, self.cloud, unavailable, clock=lambda: self.now, **options)

    def claim(self, name: str) -> NodeClaim:
        found = self.cluster.nodeclaim(name)
        assert found is not None, name
        return found

    def conditions(self, name: str) -> dict[str, str]:
        status = self.claim(name).status
        return {c.type: c.reason or "" for c in (status.conditions or []) if c.status == "True"} if status else {}
