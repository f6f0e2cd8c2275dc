"""Small builders for scheduling tests: instance types, NodePools, pods and nodes as the API serves them,
and ``solve``, which runs the scheduler and the independent validator on every result."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from autoscaler.apis.v1 import NodeClaim, NodePool
from autoscaler.cloudprovider import InstanceType, InstanceTypeOverhead, Offering
from autoscaler.scheduling import ClusterSnapshot, Scheduler, SchedulerOptions, SchedulingResult
from autoscaler_dev.scheduling_validator import validate

GIB = 2**30
ZONES = ("zone-a", "zone-b", "zone-c")
ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
CAPACITY_TYPE = "karpenter.sh/capacity-type"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
Pod = dict[str, Any]


def instance_type(
    name: str,
    cpu: int,
    memory_gib: int,
    *,
    pods: int = 110,
    arch: str = "amd64",
    zones: Sequence[str] = ZONES,
    capacity_types: Sequence[str] = ("spot", "on-demand"),
    price: float | None = None,
    extra: Mapping[str, int] | None = None,
    labels: Mapping[str, str] | None = None,
) -> InstanceType:
    """A type priced by size (spot at 70%), with AWS-like labels, 100m CPU and 256Mi kept for the system."""
    base = price if price is not None else 0.05 * cpu + 0.01 * memory_gib
    family, _, size = name.partition(".")
    return InstanceType(
        name=name,
        labels={
            INSTANCE_TYPE: name,
            "kubernetes.io/arch": arch,
            "kubernetes.io/os": "linux",
            "karpenter.k8s.aws/instance-family": family,
            "karpenter.k8s.aws/instance-category": family[0],
            "karpenter.k8s.aws/instance-size": size or name,
            "karpenter.k8s.aws/instance-cpu": str(cpu),
            "karpenter.k8s.aws/instance-memory": str(memory_gib * 1024),
            **(labels or {}),
        },
        offerings=tuple(
            Offering(zone, ct, round(base * (0.7 if ct == "spot" else 1.0), 6))
            for zone in zones
            for ct in capacity_types
        ),
        capacity={"cpu": cpu * 1000, "memory": memory_gib * GIB, "pods": pods, **(extra or {})},
        overhead=InstanceTypeOverhead(kube_reserved={"cpu": 100, "memory": 256 * 2**20}),
    )


def catalog() -> list[InstanceType]:
    """A small catalog: general purpose (m), compute (c), memory (r) and an arm64 family."""
    return [
        instance_type("m5.large", 2, 8),
        instance_type("m5.xlarge", 4, 16),
        instance_type("m5.2xlarge", 8, 32),
        instance_type("m5.4xlarge", 16, 64),
        instance_type("c5.large", 2, 4),
        instance_type("c5.xlarge", 4, 8),
        instance_type("c5.4xlarge", 16, 32),
        instance_type("r5.large", 2, 16),
        instance_type("r5.2xlarge", 8, 64),
        instance_type("m6g.large", 2, 8, arch="arm64", price=0.08),
        instance_type("m6g.xlarge", 4, 16, arch="arm64", price=0.16),
    ]


def nodepool(
    name: str = "default",
    *,
    requirements: Iterable[Mapping[str, Any]] = (),
    taints: Iterable[Mapping[str, Any]] = (),
    startup_taints: Iterable[Mapping[str, Any]] = (),
    weight: int | None = None,
    limits: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
) -> NodePool:
    spec: dict[str, Any] = {
        "template": {
            "metadata": {"labels": dict(labels or {})},
            "spec": {
                "requirements": list(requirements),
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
            },
        }
    }
    if taints:
        spec["template"]["spec"]["taints"] = list(taints)
    if startup_taints:
        spec["template"]["spec"]["startupTaints"] = list(startup_taints)
    if weight is not None:
        spec["weight"] = weight
    if limits is not None:
        spec["limits"] = dict(limits)
    return NodePool.model_validate({"metadata": {"name": name}, "spec": spec})


_counter = iter(range(1, 10**9))


def pod(
    name: str | None = None,
    *,
    cpu: str = "1",
    memory: str = "1Gi",
    labels: Mapping[str, str] | None = None,
    namespace: str = "default",
    node_name: str | None = None,
    requests: Mapping[str, Any] | None = None,
    **spec: Any,
) -> Pod:
    sequence = next(_counter)
    name = name or f"pod-{sequence}"
    body: Pod = {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{sequence:08d}",
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": dict(labels or {}),
        },
        "spec": {
            "containers": [
                {"name": "app", "resources": {"requests": dict(requests or {"cpu": cpu, "memory": memory})}}
            ],
            **spec,
        },
        "status": {"phase": "Running" if node_name else "Pending"},
    }
    if node_name:
        body["spec"]["nodeName"] = node_name
    return body


def pods(count: int, **kwargs: Any) -> list[Pod]:
    return [pod(**kwargs) for _ in range(count)]


def node(
    name: str,
    *,
    cpu: str = "4",
    memory: str = "16Gi",
    pods_capacity: int = 110,
    labels: Mapping[str, str] | None = None,
    taints: Iterable[Mapping[str, Any]] = (),
    zone: str = "zone-a",
    nodepool_name: str | None = None,
    instance: str = "m5.xlarge",
    initialized: bool = True,
) -> dict[str, Any]:
    all_labels = {HOSTNAME: name, ZONE: zone, INSTANCE_TYPE: instance, "kubernetes.io/arch": "amd64", **(labels or {})}
    if nodepool_name:
        all_labels["karpenter.sh/nodepool"] = nodepool_name
        if initialized:
            all_labels["karpenter.sh/initialized"] = "true"
    resources = {"cpu": cpu, "memory": memory, "pods": str(pods_capacity)}
    return {
        "metadata": {"name": name, "labels": all_labels},
        "spec": {"taints": list(taints), "providerID": f"aws:///{zone}/i-{name}"},
        "status": {"allocatable": resources, "capacity": resources},
    }


def inflight_nodeclaim(
    name: str, nodepool_name: str = "default", cpu: str = "4", memory: str = "16Gi", zone: str = "zone-a"
) -> NodeClaim:
    return NodeClaim.model_validate(
        {
            "metadata": {
                "name": name,
                "labels": {"karpenter.sh/nodepool": nodepool_name, ZONE: zone, INSTANCE_TYPE: "m5.xlarge"},
            },
            "spec": {
                "requirements": [{"key": INSTANCE_TYPE, "operator": "In", "values": ["m5.xlarge"]}],
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
            },
            "status": {
                "providerID": f"aws:///{zone}/i-{name}",
                "allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
                "capacity": {"cpu": cpu, "memory": memory, "pods": "110"},
            },
        }
    )


def snapshot(
    nodepools: Sequence[NodePool] | None = None,
    instance_types: Sequence[InstanceType] | Mapping[str, Sequence[InstanceType]] | None = None,
    **kwargs: Any,
) -> ClusterSnapshot:
    nodepools = list(nodepools) if nodepools is not None else [nodepool()]
    types = instance_types if instance_types is not None else catalog()
    by_pool = types if isinstance(types, Mapping) else {np.name: list(types) for np in nodepools}
    return ClusterSnapshot(nodepools=nodepools, instance_types=by_pool, **kwargs)


def solve(
    cluster: ClusterSnapshot,
    pending: Sequence[Pod],
    *,
    respect_preferences: bool = True,
    max_instance_types: int = 60,
    excluded_nodes: Sequence[str] = (),
    max_new_nodeclaims: int | None = None,
) -> SchedulingResult:
    """Schedule, then check the result with the independent validator (a violation fails the test)."""
    options = SchedulerOptions(respect_preferences=respect_preferences, max_instance_types=max_instance_types)
    result = Scheduler(cluster, options).solve(
        pending, excluded_nodes=excluded_nodes, max_new_nodeclaims=max_new_nodeclaims
    )
    report = validate(
        cluster,
        pending,
        result,
        max_instance_types=max_instance_types,
        excluded_nodes=excluded_nodes,
        max_new_nodeclaims=max_new_nodeclaims,
    )
    assert report.ok, str(report)
    return result


def placement_of(result: SchedulingResult, name: str, namespace: str = "default") -> tuple[str, str]:
    for ref, where in result.placements.items():
        if (ref.namespace, ref.name) == (namespace, name):
            return where.kind, where.name
    raise AssertionError(f"{namespace}/{name} was not placed: {error_of(result, name, namespace)}")


def error_of(result: SchedulingResult, name: str, namespace: str = "default") -> str:
    for ref, error in result.unschedulable.items():
        if (ref.namespace, ref.name) == (namespace, name):
            return str(error)
    return ""


def claim_of(result: SchedulingResult, name: str, namespace: str = "default") -> Any:
    kind, where = placement_of(result, name, namespace)
    assert kind == "new", f"{name} is on {kind} {where}"
    return next(c for c in result.new_nodeclaims if c.hostname == where)


def zone_of(result: SchedulingResult, name: str) -> str:
    claim = claim_of(result, name)
    values = claim.requirements[ZONE].values
    assert len(values) == 1, f"{name}'s NodeClaim is not pinned to one zone: {claim.requirements[ZONE]!r}"
    return next(iter(values))
