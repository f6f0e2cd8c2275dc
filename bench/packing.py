"""Packing against the optimum: the scheduler's cost next to the exact optimum of the same small instances.

50 random instances (seeded): 10-200 pending pods in 1-6 Deployments of mixed shapes (CPU 100m-4, memory
128Mi-8Gi), onto one NodePool offering 10-40 instance types drawn from general purpose, compute and memory
families (Intel, AMD, Graviton; large to 8xlarge), built from moto's DescribeInstanceTypes catalogue as the
AWS provider builds them (allocatable after kube-reserved and eviction thresholds, ENI-limited pod counts)
and priced from the shipped us-east-1 on-demand price table. A third of the instances give one Deployment
hostname anti-affinity, a third a hostname topology spread (maxSkew 1 or 2).

Each instance is solved by ``Scheduler.solve`` (the provisioner's entry point; its cost is the sum of each
NodeClaim's cheapest option, what CreateFleet's lowest-price strategy launches) and exactly by the MILP of
``packing_milp.py`` under a time limit. ``ratio`` is scheduler cost / optimum; where the solver ran out of
time it is taken against the best packing the solver found (``milp_status`` time_limit) and
``ratio_vs_bound`` against its proven lower bound, so the true ratio lies between the two.

Usage: ``.venv/bin/python bench/packing.py [--json] [--instances 50] [--time-limit 10] [--seed 7]``
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from autoscaler.cloudprovider import InstanceType, Offering
from autoscaler.providers.aws import instancetype
from autoscaler.providers.aws.pricing import shipped_on_demand_prices
from autoscaler.scheduling import ClusterSnapshot, Scheduler
from autoscaler_dev.scheduling_validator import validate
from bench.instance_types import catalogue_text
from bench.packing_milp import Group, NodeType, Solution, solve
from bench.workloads import CREATED, DISCOVERY_LABEL, HOSTNAME, MIB, nodepool

FAMILIES = frozenset(
    "m5 m5a m6i m6a m7i m6g m7g c5 c5a c6i c6a c7i c6g c7g r5 r5a r6i r6a r7i r6g t3".split()  # noqa: SIM905
)
SIZES = frozenset(("large", "xlarge", "2xlarge", "4xlarge", "8xlarge"))
ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
CPU_MILLIS = (100, 250, 500, 1000, 1500, 2000, 4000)
MEMORY_MIB = (128, 256, 512, 1024, 2048, 4096, 8192)
RESOURCES = ("cpu", "memory", "pods")
JSON_KEYS = ("instance", "pods", "types", "constraint", "scheduler_cost", "milp_cost", "milp_bound", "ratio")
JSON_KEYS += ("ratio_vs_bound", "milp_status", "milp_seconds", "nodes", "milp_nodes")


@dataclass(frozen=True)
class Deployment:
    name: str
    cpu: int  # millicores
    memory: int  # MiB
    replicas: int
    constraint: str | None = None  # "anti-affinity" or "spread"
    max_skew: int = 1

    @property
    def per_node(self) -> int | None:
        return {"anti-affinity": 1, "spread": self.max_skew}.get(self.constraint or "")


@dataclass(frozen=True)
class Instance:
    index: int
    types: tuple[InstanceType, ...]
    deployments: tuple[Deployment, ...]

    @property
    def pods(self) -> int:
        return sum(d.replicas for d in self.deployments)

    @property
    def constraint(self) -> str:
        return next((d.constraint for d in self.deployments if d.constraint), "none")


@cache
def type_pool() -> tuple[InstanceType, ...]:
    prices, infos = shipped_on_demand_prices(), json.loads(catalogue_text())
    settings = instancetype.NodeSettings(family="AL2023", region="us-east-1")
    pool = []
    for name, info in sorted(infos.items()):
        family, _, size = name.partition(".")
        if family in FAMILIES and size in SIZES and name in prices:
            offerings = [Offering(zone, "on-demand", prices[name]) for zone in ZONES]
            built = instancetype.build(info, settings, offerings)
            if built is not None:
                pool.append(built)
    return tuple(pool)


def generate(index: int, seed: int) -> Instance:
    rng = random.Random(seed * 1000 + index)
    types = tuple(rng.sample(type_pool(), rng.randint(10, 40)))
    total = rng.randint(10, 200)
    count = min(rng.randint(1, 6), total)
    cuts = sorted(rng.sample(range(1, total), count - 1))
    replicas = [b - a for a, b in zip([0, *cuts], [*cuts, total], strict=True)]
    deployments = [
        Deployment(f"app-{d}", rng.choice(CPU_MILLIS), rng.choice(MEMORY_MIB), n) for d, n in enumerate(replicas)
    ]
    kind = (None, "anti-affinity", "spread")[index % 3]
    if kind:
        # the constrained Deployment is the first with at most 40 replicas (one node per 1-2 of them)
        target = min(range(len(deployments)), key=lambda d: (deployments[d].replicas > 40, d))
        chosen = deployments[target]
        deployments[target] = Deployment(
            chosen.name, chosen.cpu, chosen.memory, min(chosen.replicas, 40), kind, rng.choice((1, 2))
        )
    return Instance(index, types, tuple(deployments))


def pod(deployment: Deployment, sequence: int) -> dict[str, Any]:
    labels = {**DISCOVERY_LABEL, "app": deployment.name}
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "app",
                "image": "pause",
                "resources": {"requests": {"cpu": f"{deployment.cpu}m", "memory": f"{deployment.memory}Mi"}},
            }
        ]
    }
    selector = {"matchLabels": {"app": deployment.name}}
    if deployment.constraint == "anti-affinity":
        term = {"labelSelector": selector, "topologyKey": HOSTNAME}
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    elif deployment.constraint == "spread":
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": deployment.max_skew,
                "topologyKey": HOSTNAME,
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": selector,
            }
        ]
    return {
        "metadata": {
            "name": f"{deployment.name}-{sequence:04d}",
            "namespace": "default",
            "uid": f"{sequence:08x}-0000-4000-8000-000000000000",
            "creationTimestamp": CREATED,
            "labels": labels,
        },
        "spec": spec,
        "status": {"phase": "Pending"},
    }


def pods_of(instance: Instance) -> list[dict[str, Any]]:
    pods: list[dict[str, Any]] = []
    for deployment in instance.deployments:
        pods += [pod(deployment, len(pods) + i) for i in range(deployment.replicas)]
    return pods


def groups_and_types(instance: Instance) -> tuple[list[Group], list[NodeType]]:
    """The MILP's view: CPU in millicores, memory in MiB (HiGHS prefers moderate magnitudes), pod slots."""
    scale = {"cpu": 1, "memory": MIB, "pods": 1}
    groups = [Group((d.cpu, d.memory, 1), d.replicas, d.per_node) for d in instance.deployments]
    types = [
        NodeType(
            it.name,
            tuple(it.allocatable.get(r, 0) / scale[r] for r in RESOURCES),
            it.cheapest_price(),
        )
        for it in instance.types
    ]
    return groups, types


def run(instance: Instance, time_limit: float) -> dict[str, Any]:
    pods = pods_of(instance)
    snapshot = ClusterSnapshot(nodepools=[nodepool()], instance_types={"default": list(instance.types)})
    result = Scheduler(snapshot).solve(pods)
    if result.unschedulable or not validate(snapshot, pods, result).ok:
        raise SystemExit(f"instance {instance.index}: the scheduler's result is incomplete or invalid")
    cost = result.cost_per_hour
    groups, types = groups_and_types(instance)
    exact: Solution = solve(groups, types, upper_bound=cost, time_limit=time_limit)
    # the scheduler's packing is a solution too: the best known is the cheaper of the two
    best = min(cost, exact.objective) if exact.objective is not None else cost
    return {
        "instance": instance.index,
        "pods": instance.pods,
        "types": len(instance.types),
        "constraint": instance.constraint,
        "scheduler_cost": round(cost, 4),
        "milp_cost": round(best, 4),
        "milp_bound": round(exact.bound, 4) if exact.bound is not None else None,
        "ratio": round(cost / best, 4),
        "ratio_vs_bound": round(cost / exact.bound, 4) if exact.bound else None,
        "milp_status": exact.status,
        "milp_seconds": round(exact.seconds, 2),
        "nodes": len(result.new_nodeclaims),
        "milp_nodes": len(exact.nodes),
        "scheduler_types": sorted(c.instance_types[0].name for c in result.new_nodeclaims),
        "milp_types": sorted(name for name, _ in exact.nodes),
    }


def percentile(values: Sequence[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * len(ordered)) - 1))]


def summary(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    ratios = [r["ratio"] for r in rows]
    return {
        "median_ratio": round(statistics.median(ratios), 4),
        "p95_ratio": round(percentile(ratios, 0.95), 4),
        "max_ratio": round(max(ratios), 4),
        "instances": len(rows),
        "milp_optimal": sum(r["milp_status"] == "optimal" for r in rows),
        "milp_seconds_max": max(r["milp_seconds"] for r in rows),
    }


def print_table(rows: Sequence[dict[str, Any]], totals: dict[str, Any]) -> None:
    header = f"{'inst':>4}{'pods':>6}{'types':>6}  {'constraint':<14}{'sched $/h':>10}{'MILP $/h':>10}"
    header += f"{'bound':>9}{'ratio':>8}{'vs bound':>9}{'nodes':>7}{'MILP':>6}  {'status':<11}{'s':>6}"
    print(header)
    print("-" * len(header))
    for r in rows:
        bound = f"{r['milp_bound']:.3f}" if r["milp_bound"] is not None else "-"
        versus = f"{r['ratio_vs_bound']:.3f}" if r["ratio_vs_bound"] is not None else "-"
        print(
            f"{r['instance']:>4}{r['pods']:>6}{r['types']:>6}  {r['constraint']:<14}{r['scheduler_cost']:>10.3f}"
            f"{r['milp_cost']:>10.3f}{bound:>9}{r['ratio']:>8.3f}{versus:>9}{r['nodes']:>7}{r['milp_nodes']:>6}"
            f"  {r['milp_status']:<11}{r['milp_seconds']:>6.1f}"
        )
    print(
        f"\nratio median {totals['median_ratio']:.3f}, p95 {totals['p95_ratio']:.3f}, max {totals['max_ratio']:.3f}"
        f" (goal: median <= 1.02, max <= 1.10); MILP optimal on {totals['milp_optimal']} of {totals['instances']},"
        f" slowest {totals['milp_seconds_max']:.1f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", action="store_true", help="one JSON object per instance, then the summary")
    parser.add_argument("--instances", type=int, default=50)
    parser.add_argument("--time-limit", type=float, default=10.0, help="seconds of MILP per instance")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--only", type=int, help="run one instance and print its packings")
    args = parser.parse_args()
    if args.only is not None:
        print(json.dumps(run(generate(args.only, args.seed), args.time_limit), indent=1))
        return
    rows = []
    for index in range(args.instances):
        row = run(generate(index, args.seed), args.time_limit)
        rows.append(row)
        if args.json:
            print(json.dumps({k: row[k] for k in JSON_KEYS}), flush=True)
    totals = summary(rows)
    if args.json:
        print(json.dumps(totals))
    else:
        print_table(rows, totals)


if __name__ == "__main__":
    main()
