"""The workload of Karpenter's scheduling benchmark, rebuilt in our terms.

Karpenter's ``scheduling_benchmark_test.go`` schedules ``makeDiversePods(N)`` (or 4,000 preference pods)
onto one NodePool offering ``fake.InstanceTypes(400)``. This module generates the same shapes:

* instance type ``fake-it-i`` (i = 0..399): ``i+1`` CPUs, ``2(i+1)`` GiB, ``10(i+1)`` pods, 100m CPU and
  10Mi kube-reserved; offered as spot in test-zone-1/2 and on-demand in test-zone-1/2/3, all at
  ``0.1 * cpus + 0.1 * memory bytes / 1e9`` per hour; labels: instance type, arch amd64, ``size``
  (large above 4 CPUs and 8 GiB, else small), ``special=optional`` on large ones, ``integer`` = CPUs.
  (Karpenter's fake type offers three operating systems; ours carry ``kubernetes.io/os=linux``, the
  one label value our single-valued instance type labels allow. No benchmark pod selects on it.)
* ``makeDiversePods(N)``: N/5 each of generic pods, zonal spread pods, hostname spread pods, zonal
  self-affinity pods and hostname self-anti-affinity pods, then generic pods for the remainder. CPU is
  one of 100m/250m/500m/1/1.5, memory one of 100/256/512/1024/2048/4096 MiB, label values one of a..g,
  all drawn from one generator seeded with 42, in the order Karpenter draws them (labels, selector,
  CPU, memory). Python's generator yields other values than Go's for the same seed; the shapes, the
  counts and the distributions are the same.
* ``makePreferencePods(N)``: app=nginx pods preferring test-zone-1, with preferred anti-affinity to
  each other per zone (weight 10, unsatisfiable after the first) and per hostname (weight 1).

Pods are created in one second and get increasing UIDs, so ties in Karpenter's queue order (CPU,
memory, creation time, UID) fall in creation order, as Karpenter's time-based UIDs do.
"""

from __future__ import annotations

import random
from typing import Any

from autoscaler.apis.v1 import NodePool
from autoscaler.cloudprovider import InstanceType, InstanceTypeOverhead, Offering

GIB = 2**30
MIB = 2**20
ZONE, HOSTNAME = "topology.kubernetes.io/zone", "kubernetes.io/hostname"
NODEPOOL_NAME = "default"
DISCOVERY_LABEL = {"testing/cluster": "unspecified"}
CREATED = "2025-01-01T00:00:00Z"
_OFFERINGS = (
    ("test-zone-1", "spot"),
    ("test-zone-2", "spot"),
    ("test-zone-1", "on-demand"),
    ("test-zone-2", "on-demand"),
    ("test-zone-3", "on-demand"),
)


def price(cpus: int, memory: int) -> float:
    return 0.1 * cpus + 0.1 * memory / 1e9


def instance_type(index: int) -> InstanceType:
    cpus, memory, pods = index + 1, (index + 1) * 2 * GIB, (index + 1) * 10
    large = cpus > 4 and memory > 8 * GIB
    labels = {
        "node.kubernetes.io/instance-type": f"fake-it-{index}",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/os": "linux",
        "size": "large" if large else "small",
        "integer": str(cpus),
    }
    if large:
        labels["special"] = "optional"
    return InstanceType(
        name=f"fake-it-{index}",
        labels=labels,
        offerings=tuple(Offering(zone, capacity_type, price(cpus, memory)) for zone, capacity_type in _OFFERINGS),
        capacity={"cpu": cpus * 1000, "memory": memory, "pods": pods},
        overhead=InstanceTypeOverhead(kube_reserved={"cpu": 100, "memory": 10 * MIB}),
    )


def instance_types(total: int = 400) -> list[InstanceType]:
    return [instance_type(i) for i in range(total)]


def nodepool() -> NodePool:
    """The benchmark's NodePool: no requirements, a discovery label, generous CPU and memory limits."""
    return NodePool.model_validate(
        {
            "metadata": {"name": NODEPOOL_NAME},
            "spec": {
                "limits": {"cpu": "10000000", "memory": "10000000Gi"},
                "template": {
                    "metadata": {"labels": DISCOVERY_LABEL},
                    "spec": {
                        "requirements": [],
                        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                    },
                },
            },
        }
    )


class PodFactory:
    """Generates Karpenter's benchmark pods from one seeded generator."""

    def __init__(self, seed: int = 42) -> None:
        self._random = random.Random(seed)
        self._sequence = 0

    def _label_value(self) -> str:
        return self._random.choice("abcdefg")

    def _requests(self) -> dict[str, str]:
        cpu = self._random.choice((100, 250, 500, 1000, 1500))
        memory = self._random.choice((100, 256, 512, 1024, 2048, 4096))
        return {"cpu": f"{cpu}m", "memory": f"{memory}Mi"}

    def _pod(self, labels: dict[str, str], spec: dict[str, Any], requests: dict[str, str]) -> dict[str, Any]:
        self._sequence += 1
        name = f"pod-{self._sequence:06d}"
        return {
            "metadata": {
                "name": name,
                "namespace": "default",
                "uid": f"{self._sequence:08x}-0000-4000-8000-000000000000",
                "creationTimestamp": CREATED,
                "labels": {**DISCOVERY_LABEL, **labels},
            },
            "spec": {"containers": [{"name": "app", "image": "pause", "resources": {"requests": requests}}], **spec},
            "status": {"phase": "Pending"},
        }

    def generic(self, count: int) -> list[dict[str, Any]]:
        return [self._pod({"my-label": self._label_value()}, {}, self._requests()) for _ in range(count)]

    def topology_spread(self, count: int, key: str) -> list[dict[str, Any]]:
        pods = []
        for _ in range(count):
            labels = {"my-label": self._label_value()}
            selector = {"matchLabels": {"my-label": self._label_value()}}
            spread = {"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule", "labelSelector": selector}
            pods.append(self._pod(labels, {"topologySpreadConstraints": [spread]}, self._requests()))
        return pods

    def pod_affinity(self, count: int, key: str) -> list[dict[str, Any]]:
        pods = []
        for _ in range(count):
            labels = {"my-affininity": self._label_value()}  # sic: Karpenter's label key
            term = {"labelSelector": {"matchLabels": labels}, "topologyKey": key}
            affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
            pods.append(self._pod(labels, {"affinity": affinity}, self._requests()))
        return pods

    def pod_anti_affinity(self, count: int, key: str) -> list[dict[str, Any]]:
        labels = {"app": "nginx"}
        term = {"labelSelector": {"matchLabels": labels}, "topologyKey": key}
        affinity = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
        return [self._pod(labels, {"affinity": affinity}, self._requests()) for _ in range(count)]

    def diverse(self, count: int) -> list[dict[str, Any]]:
        """``makeDiversePods``: five kinds of pods, count/5 each, generic pods for the remainder."""
        share = count // 5
        pods = self.generic(share)
        pods += self.topology_spread(share, ZONE)
        pods += self.topology_spread(share, HOSTNAME)
        pods += self.pod_affinity(share, ZONE)
        pods += self.pod_anti_affinity(share, HOSTNAME)
        return pods + self.generic(count - len(pods))

    def preference(self, count: int) -> list[dict[str, Any]]:
        """``makePreferencePods``: identical pods whose preferences can and cannot all be met."""
        app = {"app": "nginx"}
        affinity = {
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 1,
                        "preference": {
                            "matchExpressions": [{"key": ZONE, "operator": "In", "values": ["test-zone-1"]}]
                        },
                    }
                ]
            },
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 10, "podAffinityTerm": {"labelSelector": {"matchLabels": app}, "topologyKey": ZONE}},
                    {"weight": 1, "podAffinityTerm": {"labelSelector": {"matchLabels": app}, "topologyKey": HOSTNAME}},
                ]
            },
        }
        requests = self._requests()  # Karpenter draws one request for all of them
        return [self._pod(app, {"affinity": affinity}, requests) for _ in range(count)]
