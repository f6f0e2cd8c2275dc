"""How much one termination sweep costs the function itself, apart from API latency.

Drains N nodes of 110 pods each (the EKS default max-pods of many instance types) over the in-memory
Kubernetes and EC2 doubles, and prints per sweep: wall time, time spent planning (the reference: the pure
part), and the number of API calls made, so that API latency can be multiplied in for a real cluster.

    .venv/bin/python bench/termination_sweep.py [nodes]
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from autoscaler.controllers.termination import TerminationController
from autoscaler.controllers.termination import controller as controller_module
from autoscaler.kube.port import ObjectRef
from tests.support.memory_cloud import MemoryCloud
from tests.support.memory_cluster import MemoryCluster
from tests.unit.termination.builders import node, nodeclaim, pod

PODS_PER_NODE = 110


def build(nodes: int, clock: Callable[[], datetime]) -> tuple[MemoryCluster, MemoryCloud]:
    cluster, cloud = MemoryCluster(clock=clock), MemoryCloud()
    for n in range(nodes):
        provider_id = f"aws:///us-east-1a/i-{n:08x}"
        cloud.launch(provider_id)
        pods = [pod(f"n{n}-p{i}", node=f"node-{n}", daemon=i % 10 == 0) for i in range(PODS_PER_NODE)]
        cluster.add(nodeclaim(f"claim-{n}", provider_id, node_name=f"node-{n}"), node(f"node-{n}", provider_id), *pods)
        cluster.delete(ObjectRef("NodeClaim", f"claim-{n}"))
    return cluster, cloud


def main(nodes: int) -> None:
    now = [datetime(2026, 11, 30, tzinfo=UTC)]
    cluster, cloud = build(nodes, lambda: now[0])
    planning = [0.0]
    plan = controller_module.plan_drain

    def timed_plan(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return plan(*args, **kwargs)
        finally:
            planning[0] += time.perf_counter() - start

    controller_module.plan_drain = timed_plan  # type: ignore[assignment]
    controller = TerminationController(cluster, cloud, clock=lambda: now[0])
    print(f"{nodes} terminating nodes x {PODS_PER_NODE} pods")
    print(f"{'sweep':>5} {'wall ms':>9} {'planning ms':>12} {'API calls':>10}  calls by kind")
    sweep = 0
    while cluster.names("NodeClaim"):
        sweep += 1
        writes_before, cloud_before, planning[0] = len(cluster.writes), len(cloud.calls), 0.0
        start = time.perf_counter()
        controller.sweep()
        wall = time.perf_counter() - start
        kinds = Counter(w.split()[0] for w in cluster.writes[writes_before:])
        kinds.update(c.split()[0] + "-ec2" for c in cloud.calls[cloud_before:])
        reads = 2 + nodes  # nodeclaims + nodes, and the pods of each node
        calls = sum(kinds.values()) + reads
        print(f"{sweep:>5} {wall * 1e3:>9.1f} {planning[0] * 1e3:>12.1f} {calls:>10}  {dict(kinds)}")
        cluster.kubelet_removes_terminating_pods()
        now[0] += timedelta(minutes=1)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 50)
