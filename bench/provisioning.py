"""One provisioner pass over N pending pods against the Kubernetes API emulator.

    .venv/bin/python bench/provisioning.py                       # moto 1000, recorded 1000 and 10000
    .venv/bin/python bench/provisioning.py --cloud moto 1000     # one cloud, chosen sizes
    .venv/bin/python bench/provisioning.py --cloud recorded --latency-ms 5 --workers 1 10000

Two clouds behind the pass: ``moto``, the AWS provider's whole real path against moto over HTTP (instance
types, CreateFleet, CreateTags, DescribeInstances); and ``recorded``, the instance type catalogue moto gave,
recorded once, with launches answered at once as the provider would report them. moto dominates a pass with
thousands of launches (its filtered DescribeInstances scans every instance of the account: at 10,000 pods it
outlasts botocore's 30 s read timeout), so large sizes run on the recorded catalogue: the figures then are
the pass's own cost and its Kubernetes API calls, which do not depend on the cloud. ``--latency-ms`` makes
the emulator answer every request that much later (an API server's round trip, without the CPU), and
``--workers`` sets how many writes a pass makes at once (``controllers.concurrency.WORKERS``, 8).

The pods are Karpenter's scheduling benchmark mix (``makeDiversePods``: generic, zonal and hostname spread,
zonal affinity, hostname anti-affinity); the NodePool takes c, m and r instances of generation 5 and later
from everything moto's catalogue holds (the AWS provider's real path: DescribeInstanceTypes, offerings,
the shipped price table). The pass is the function's own (``ProvisionerPass``, as the handler runs it): read
the cluster, schedule, create NodeClaims, launch them (CreateFleet on moto), write their status, NodePool
status. Everything runs in this one process on this machine: the emulator, moto and the pass share its
cores, so the times are an upper bound for the pass itself. Printed per N: time per phase, Kubernetes API
calls by verb and resource, EC2 calls, and a second pass over the same cluster as the reference (nothing left
to do: the cost of a sweep that finds the work done). The catalogue is described once beforehand, as a warm
Lambda container has it cached.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.cloudprovider.errors import CloudProviderError, NodeClaimNotFoundError
from autoscaler.cloudprovider.types import InstanceType
from autoscaler.cloudprovider.unavailable import InMemoryUnavailableOfferings
from autoscaler.cloudprovider.zonalshift import ShiftedZones
from autoscaler.controllers import concurrency
from autoscaler.controllers.provisioner_pass import ProvisionerPass
from autoscaler.controllers.state import ClusterState, NodeClassIndex
from autoscaler.providers.aws import nodeclaims as provider_nodeclaims
from autoscaler.providers.aws.ec2instance import Instance
from autoscaler.workloads import UNSCHEDULABLE
from autoscaler_dev.kube_emulator.emulator import KubeEmulator
from autoscaler_dev.kube_emulator.server import Fault
from autoscaler_dev.world.embedded import EmbeddedCluster
from bench.workloads import PodFactory

REQUIREMENTS = [
    {"key": wk.LABEL_INSTANCE_CATEGORY, "operator": "In", "values": ["c", "m", "r"]},
    {"key": wk.LABEL_INSTANCE_GENERATION, "operator": "Gt", "values": ["4"]},
    {"key": wk.LABEL_CAPACITY_TYPE, "operator": "In", "values": ["on-demand"]},
]


def seed(world: EmbeddedCluster, pods: int) -> None:
    """The NodePool, its EC2NodeClass (resolved by the nodeclass controller) and the pending pods."""
    world.apply(
        [
            {
                "apiVersion": wk.AWS_API_VERSION,
                "kind": "EC2NodeClass",
                "metadata": {"name": "default"},
                "spec": {
                    "role": world.aws.role,
                    "amiSelectorTerms": [{"alias": "al2023@latest"}],
                    "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "world"}}],
                    "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "world"}}],
                },
            },
            {
                "apiVersion": wk.API_VERSION,
                "kind": "NodePool",
                "metadata": {"name": "default"},
                "spec": {
                    "template": {
                        "spec": {
                            "requirements": REQUIREMENTS,
                            "nodeClassRef": {"group": wk.AWS_GROUP, "kind": "EC2NodeClass", "name": "default"},
                        }
                    }
                },
            },
        ]
    )
    assert all(o.ready == "True" for o in world.resolve_nodeclasses())
    for pod in PodFactory().diverse(pods):
        pod["status"] = {"phase": "Pending", "conditions": [dict(UNSCHEDULABLE)]}
        world.kube.create({"apiVersion": "v1", "kind": "Pod", **pod})


class RecordedCloud:
    """A recorded instance type catalogue; each launch answered at once with the cheapest option in the first
    zone offering it, reported exactly as the AWS provider reports a launched instance."""

    def __init__(self, types: list[InstanceType], image: str) -> None:
        self.types, self.image = types, image
        self.unavailable = InMemoryUnavailableOfferings()
        self.launched: dict[str, NodeClaim] = {}
        self.calls: Counter[str] = Counter()

    def instance_types(self, nodepool: Any) -> list[InstanceType]:
        return self.types

    def settle_launches(self) -> None:  # answers at once: nothing runs beside them
        return None

    def create_many(self, claims: Any) -> list[NodeClaim | CloudProviderError]:
        self.calls["create_many (launch batches)"] += 1
        answers: list[NodeClaim | CloudProviderError] = []
        for claim in claims:
            uid = claim.metadata.uid or claim.name
            if uid not in self.launched:
                options = next(r.values or [] for r in claim.spec.requirements if r.key == wk.LABEL_INSTANCE_TYPE)
                chosen = min((t for t in self.types if t.name in options), key=lambda t: t.cheapest_price())
                offering = min(chosen.available_offerings(), key=lambda o: o.price)
                instance = Instance(
                    f"i-{len(self.launched):017x}",
                    chosen.name,
                    offering.zone,
                    self.image,
                    "subnet-1",
                    ("sg-1",),
                    offering.capacity_type,
                    "running",
                )
                self.launched[uid] = provider_nodeclaims.launched(claim, instance, chosen, offering.zone_id)
            answers.append(self.launched[uid])
        return answers

    def get_many(self, provider_ids: Any) -> dict[str, NodeClaim | CloudProviderError]:
        by_id = {c.status.provider_id: c for c in self.launched.values() if c.status}
        return {p: by_id.get(p) or NodeClaimNotFoundError(p) for p in provider_ids}

    def tag_registered(self, nodeclaim: Any, node_name: str) -> None:
        self.calls["tag_registered"] += 1

    def shifted_zones(self) -> ShiftedZones:
        return ShiftedZones()  # ENABLE_ZONAL_SHIFT off, as by default


class Phases:
    """Wall time spent in each wrapped method, and EC2 API calls by operation."""

    def __init__(self) -> None:
        self.seconds: Counter[str] = Counter()
        self.ec2: Counter[str] = Counter()

    def wrap(self, name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                self.seconds[name] += time.perf_counter() - started

        return timed

    def count(self, model: Any, **_: Any) -> None:
        self.ec2[model.name] += 1


def one_pass(reconciler: ProvisionerPass, kube: KubeEmulator, phases: Phases) -> tuple[float, Counter[str], Any]:
    before = Counter(kube.requests)
    phases.seconds.clear()
    phases.ec2.clear()
    started = time.perf_counter()
    result = reconciler.run()
    elapsed = time.perf_counter() - started
    calls = Counter(kube.requests)
    calls.subtract(before)
    return elapsed, +calls, result


def report(label: str, elapsed: float, calls: Counter[str], result: Any, phases: Phases) -> None:
    summary = result.summary()
    print(
        f"  {label}: {elapsed:.2f} s for {summary['pods']} pods -> {summary['nodeclaims_created']} NodeClaims "
        f"created, {summary['launched']} launched, {summary['unschedulable']} unschedulable"
    )
    shown = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in phases.seconds.items())
    print(f"    phases: {shown}; scheduling {summary['scheduling_seconds']:.2f} s")
    print(f"    Kubernetes API calls: {sum(calls.values())} ({', '.join(f'{k} {v}' for k, v in calls.most_common())})")
    print(f"    cloud calls: {sum(phases.ec2.values())} ({', '.join(f'{k} {v}' for k, v in phases.ec2.most_common())})")


def run(world: EmbeddedCluster, pods: int, cloud_kind: str, latency: float) -> None:
    seed(world, pods)
    cluster = world.cluster()
    index = NodeClassIndex()
    provider = world.provider(index.get)
    phases = Phases()
    provider.aws.clients.ec2.meta.events.register("after-call.ec2.*", phases.count)
    started = time.perf_counter()
    index.update(cluster.nodeclasses())
    types = provider.instance_types(cluster.nodepools()[0])  # the catalogue, as a warm container has it
    print(
        f"N = {pods}, cloud {cloud_kind}: {len(types)} instance types described in "
        f"{time.perf_counter() - started:.1f} s (once per container)"
    )
    cloud: Any = provider if cloud_kind == "moto" else RecordedCloud(types, world.aws.images["al2023/x86_64/standard"])
    unavailable = provider.aws.unavailable if cloud is provider else cloud.unavailable
    reconciler = ProvisionerPass(cluster, cloud, unavailable, nodeclasses=index)
    if latency:
        world.kube.inject(Fault(0, times=10**9, delay=latency))
    read = ClusterState.read
    ClusterState.read = phases.wrap("read", read)  # type: ignore[method-assign]
    reconciler.provisioning.provision = phases.wrap("provision", reconciler.provisioning.provision)  # type: ignore[method-assign]
    reconciler.lifecycle.reconcile = phases.wrap("lifecycle", reconciler.lifecycle.reconcile)  # type: ignore[method-assign]
    reconciler.nodepools.reconcile = phases.wrap("nodepool status", reconciler.nodepools.reconcile)  # type: ignore[method-assign]
    try:
        for label in ("pass", "reference: the next pass, nothing to do"):
            if isinstance(cloud, RecordedCloud):
                cloud.calls.clear()
            elapsed, calls, result = one_pass(reconciler, world.kube, phases)
            if isinstance(cloud, RecordedCloud):
                phases.ec2.update(cloud.calls)
            report(label, elapsed, calls, result, phases)
    finally:
        ClusterState.read = read  # type: ignore[method-assign]


def main(runs: list[tuple[str, int]], latency: float) -> None:
    print(f"writes {concurrency.WORKERS} at a time; API latency {latency * 1000:.0f} ms")
    with EmbeddedCluster.start() as first:
        for number, (cloud, pods) in enumerate(runs):
            if number == 0:
                run(first, pods, cloud, latency)
                continue
            with KubeEmulator() as kube:  # a fresh cluster; moto's account is one per process
                run(EmbeddedCluster(first.aws, kube), pods, cloud, latency)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--cloud", choices=("moto", "recorded"))
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--workers", type=int, default=concurrency.WORKERS)
    parser.add_argument("sizes", nargs="*", type=int)
    options = parser.parse_args()
    concurrency.WORKERS = options.workers
    runs = (
        [(options.cloud, n) for n in options.sizes]
        if options.cloud
        else [("moto", 1000), ("recorded", 1000), ("recorded", 10000)]
    )
    main(runs, options.latency_ms / 1000)
