"""The provisioner pass at scale: a 40,000-pod burst into an empty cluster, and a steady 5,000-node cluster.

    .venv/bin/python bench/scale.py [--json] [--cases burst-40k,steady-5k] [--pods 40000] [--nodes 5000]

The pass is the function's own (``ProvisionerPass``, as the handler runs it) over the in-memory doubles: the
Kubernetes double of the tests (``tests/support/memory_cluster.py``, every read a fresh copy, as a list decodes
fresh objects) and a launching cloud answering at once (``bench/provisioning.py``'s ``RecordedCloud``) over a
fixed catalogue, so the figures are the pass's own CPU and memory, not an API server's or EC2's latency.

- ``burst-40k``: Karpenter's diverse scheduling mix (``bench/workloads.py``: generic, zonal and hostname spread,
  zonal affinity, hostname anti-affinity) of 40,000 pending pods into an empty cluster, one NodePool over the
  scheduling benchmark's 400 instance types; passes until every pod is nominated (placed on a NodeClaim this
  pass created or one in flight) and every NodeClaim launched. ``time_to_all_launched_s`` is the sum of those
  passes' seconds (the pass time; what the event queue and invocations add is not in it).
- ``steady-5k``: 5,000 initialized nodes (m5.2xlarge, two zones) carrying 50,000 pods, with a trickle: 100
  small pods pending that fit on the nodes there are, 20 large ones that need new nodes, 10 NodeClaims
  launched and not yet registered. One pass.

Per pass: the cluster read, scheduling and the rest (creates, launches, status writes) in seconds, the writes,
Kubernetes requests (port calls, reads included), EC2 calls as the AWS provider would make them for those
launches (per ``create_many`` of at most 100: DescribeInstances per 200 names, one CreateFleet per launch shape,
one CreateTags per instance; per ``tag_registered`` one CreateTags), and the seconds EC2's default token buckets
(``autoscaler_dev/world/ec2_limits.py``) need at least for them. Peak memory: each case runs in a subprocess;
``peak_mb`` is its peak RSS less what it held before the first pass, plus what the interpreter and imports held
(the stored cluster of the double is not the function's), against the provisioner's configured memory
(``infra/catalog.py``). Figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def rss_mb() -> float:
    """The process's resident memory now."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize() / 2**20


BASELINE_MB = rss_mb()  # the interpreter alone, before the imports below

from autoscaler.apis.v1 import labels as wk  # noqa: E402
from autoscaler.apis.v1.nodeclaim import NodeClaim  # noqa: E402
from autoscaler.cloudprovider.errors import CloudProviderError  # noqa: E402
from autoscaler.cloudprovider.types import InstanceType  # noqa: E402
from autoscaler.controllers.provisioner_pass import PassResult, ProvisionerPass  # noqa: E402
from autoscaler.controllers.state import ClusterState  # noqa: E402
from autoscaler.workloads import UNSCHEDULABLE  # noqa: E402
from autoscaler_dev.world.ec2_limits import MUTATING, NON_MUTATING, RESOURCE_BUCKETS, BucketSize  # noqa: E402
from bench.provisioning import RecordedCloud  # noqa: E402
from bench.workloads import PodFactory, instance_types, nodepool  # noqa: E402
from infra.catalog import FUNCTIONS  # noqa: E402
from tests.support.memory_cluster import MemoryCluster  # noqa: E402
from tests.unit.controllers.provisioning_doubles import CATALOGUE, ready_nodeclass  # noqa: E402
from tests.unit.disruption.world import NOW, node_and_claim, pod, pool  # noqa: E402

CASES = ("burst-40k", "steady-5k")
MAX_PASSES = 20
DESCRIBE_NAMES = 200  # names per DescribeInstances filter (the launcher's FILTER_VALUES)
BUCKETS = {"CreateFleet": MUTATING, "CreateTags": MUTATING, "DescribeInstances": NON_MUTATING}
IMPORTS_MB = rss_mb() - BASELINE_MB
TAGGED = {wk.ANNOTATION_INSTANCE_TAGGED: "true"}  # registered long ago: their instances are tagged already


class CountingCloud(RecordedCloud):
    """The recorded cloud, counting the EC2 calls the AWS provider would make for the same port calls."""

    def __init__(self, types: list[InstanceType]) -> None:
        super().__init__(types, "ami-0123456789abcdef0")
        self.ec2: Counter[str] = Counter()
        self.instances = 0

    def settle_launches(self) -> None:  # answers at once: nothing runs beside them
        return None

    def create_many(self, claims: Sequence[NodeClaim]) -> list[NodeClaim | CloudProviderError]:
        shapes = {tuple((r.key, r.operator, tuple(r.values or ())) for r in c.spec.requirements) for c in claims}
        self.ec2["DescribeInstances"] += math.ceil(len(claims) / DESCRIBE_NAMES)
        self.ec2["CreateFleet"] += len(shapes)
        self.ec2["CreateTags"] += len(claims)
        self.instances += len(claims)
        return super().create_many(claims)

    def get_many(self, provider_ids: Any) -> dict[str, NodeClaim | CloudProviderError]:
        self.ec2["DescribeInstances"] += math.ceil(len(provider_ids) / 500) if provider_ids else 0
        return super().get_many(provider_ids)

    def tag_registered(self, nodeclaim: Any, node_name: str) -> None:
        self.ec2["CreateTags"] += 1
        super().tag_registered(nodeclaim, node_name)


def bucket_seconds(calls: Counter[str], instances: int) -> float:
    """The least time EC2's default buckets need to serve ``calls`` and launch ``instances`` from full."""

    def needed(size: BucketSize, tokens: float) -> float:
        return max(0.0, tokens - size.capacity) / size.refill_per_second

    per_api = [needed(BUCKETS[api], n) for api, n in calls.items()]
    return max([*per_api, needed(RESOURCE_BUCKETS["RunInstances"], instances)])


def burst(pods: int) -> tuple[MemoryCluster, CountingCloud]:
    objects: list[Any] = [ready_nodeclass(), nodepool()]
    for body in PodFactory().diverse(pods):
        body["status"] = {"phase": "Pending", "conditions": [dict(UNSCHEDULABLE)]}
        objects.append({"apiVersion": "v1", "kind": "Pod", **body})
    return MemoryCluster(*objects, clock=lambda: NOW), CountingCloud(instance_types(400))


def steady(nodes: int) -> tuple[MemoryCluster, CountingCloud]:
    general = pool("general")
    objects: list[Any] = [ready_nodeclass(), general]
    for index in range(nodes):
        zone = "us-west-2a" if index % 2 else "us-west-2b"
        claim, node = node_and_claim(f"n{index:05d}", general, "m5.2xlarge", zone=zone, annotations=TAGGED)
        objects += [claim, node]
        objects += [pod(f"p{index:05d}-{k}", node["metadata"]["name"], "500m", "2Gi") for k in range(10)]
    objects += [pod(f"small-{k}", None, "250m", "512Mi") for k in range(100)]
    objects += [pod(f"large-{k}", None, "6", "20Gi") for k in range(20)]
    for index in range(10):  # launched, not registered: the lifecycle's registration step has work
        claim, _ = node_and_claim(f"new{index:02d}", general, "m5.2xlarge")
        assert claim.status is not None
        claim.status.node_name = None
        claim.status.conditions = [c for c in claim.status.conditions or [] if c.type == "Launched"]
        objects.append(claim)
    for body in objects:
        if isinstance(body, dict) and body["kind"] == "Pod" and "nodeName" not in body["spec"]:
            body["status"]["conditions"] = [dict(UNSCHEDULABLE)]
    return MemoryCluster(*objects, clock=lambda: NOW), CountingCloud(list(CATALOGUE))


def settled(cluster: MemoryCluster, result: PassResult) -> bool:
    """Every pending pod nominated this pass and every NodeClaim launched."""
    plan = result.provisioning.plan
    placed = {ref for ref, where in plan.placements.items() if where.kind in ("new", "nodeclaim", "node")}
    pending = len(cluster.pending_pods())
    launched = all(
        any(c.type == "Launched" and c.status == "True" for c in (claim.status.conditions or []))
        for claim in cluster.nodeclaims()
        if claim.status is not None
    )
    return not plan.unschedulable and not result.provisioning.deferred and len(placed) >= pending and launched


def run_case(case: str, size: int) -> dict[str, Any]:
    cluster, cloud = burst(size) if case.startswith("burst") else steady(size)
    reconciler = ProvisionerPass(cluster, cloud, cloud.unavailable, clock=lambda: NOW)
    read = ClusterState.read
    seconds: dict[str, float] = {}

    def timed_read(target: Any) -> ClusterState:
        started = time.perf_counter()
        try:
            return read(target)
        finally:
            seconds["read"] = time.perf_counter() - started

    ClusterState.read = timed_read  # type: ignore[assignment,method-assign]
    before_mb = rss_mb()
    rows: list[dict[str, Any]] = []
    try:
        for number in range(1, MAX_PASSES + 1):
            calls, writes = sum(cluster.calls.values()), len(cluster.writes)
            cloud.ec2.clear()
            instances = cloud.instances
            result = reconciler.run()
            summary = result.summary()
            rows.append(
                {
                    "pass": number,
                    "seconds": result.seconds,
                    "read_s": seconds["read"],
                    "scheduling_s": summary["scheduling_seconds"],
                    "pods": summary["pods"],
                    "created": summary["nodeclaims_created"],
                    "launched": summary["launched"],
                    "unschedulable": summary["unschedulable"],
                    "writes": len(cluster.writes) - writes,
                    "kube_requests": sum(cluster.calls.values()) - calls,
                    "ec2": dict(cloud.ec2),
                    "ec2_bucket_floor_s": bucket_seconds(cloud.ec2, cloud.instances - instances),
                }
            )
            if case.startswith("steady") or settled(cluster, result):
                break
    finally:
        ClusterState.read = read  # type: ignore[method-assign]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 - before_mb + BASELINE_MB + IMPORTS_MB
    done = case.startswith("steady") or len(rows) < MAX_PASSES
    figures: dict[str, Any] = {
        "case": case,
        "passes": len(rows),
        "pass_seconds_max": round(max(r["seconds"] for r in rows), 3),
        "peak_mb": round(peak),
        "memory_mb": FUNCTIONS["provisioner"].memory_mb,
        "timeout_s": FUNCTIONS["provisioner"].timeout_seconds,
        "kube_requests_per_pass": round(sum(r["kube_requests"] for r in rows) / len(rows)),
        "ec2_calls_per_pass": round(sum(sum(r["ec2"].values()) for r in rows) / len(rows)),
        "instances": cloud.instances,
    }
    if case.startswith("burst"):
        figures["time_to_all_launched_s"] = round(sum(r["seconds"] for r in rows), 3) if done else None
    figures["per_pass"] = [{k: round(v, 3) if isinstance(v, float) else v for k, v in r.items()} for r in rows]
    return figures


def show(figures: dict[str, Any]) -> None:
    print(
        f"{figures['case']}: {figures['passes']} passes, longest {figures['pass_seconds_max']:.2f} s "
        f"(timeout {figures['timeout_s']} s); peak {figures['peak_mb']} MB of {figures['memory_mb']} MB; "
        f"{figures['kube_requests_per_pass']} Kubernetes requests and {figures['ec2_calls_per_pass']} EC2 calls "
        f"per pass; {figures['instances']} instances launched"
        + (
            f"; all launched after {figures.get('time_to_all_launched_s')} s of passes"
            if "burst" in figures["case"]
            else ""
        )
    )
    for row in figures["per_pass"]:
        rest = row["seconds"] - row["read_s"] - row["scheduling_s"]
        ec2 = ", ".join(f"{k} {v}" for k, v in sorted(row["ec2"].items())) or "none"
        print(
            f"  pass {row['pass']}: {row['seconds']:.2f} s (read {row['read_s']:.2f}, scheduling "
            f"{row['scheduling_s']:.2f}, rest {rest:.2f}); {row['pods']} pods, {row['created']} created, "
            f"{row['launched']} launched, {row['unschedulable']} unschedulable; {row['writes']} writes, "
            f"{row['kube_requests']} Kubernetes requests; EC2 {ec2} (token buckets: at least "
            f"{row['ec2_bucket_floor_s']:.0f} s)"
        )


def main(cases: list[str], pods: int, nodes: int, as_json: bool) -> None:
    for case in cases:
        size = pods if case.startswith("burst") else nodes
        child = [sys.executable, __file__, "--child", case, "--pods", str(pods), "--nodes", str(nodes)]
        figures = json.loads(subprocess.run(child, check=True, capture_output=True, text=True).stdout)
        figures["size"] = size
        if as_json:
            print(json.dumps({k: v for k, v in figures.items() if k != "per_pass"}))
        else:
            show(figures)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--pods", type=int, default=40_000, help="pods of the burst")
    parser.add_argument("--nodes", type=int, default=5_000, help="nodes of the steady cluster (10 pods each)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        size = options.pods if options.child.startswith("burst") else options.nodes
        print(json.dumps(run_case(options.child, size)))
    else:
        main(options.cases.split(","), options.pods, options.nodes, options.json)
