"""Karpenter's scheduling benchmark, run against our scheduler.

Cases (as in kubernetes-sigs/karpenter ``scheduling_benchmark_test.go``): ``makeDiversePods(N)`` for
N = 1,000, 5,000 and 20,000, and 4,000 preference pods with preferences respected and ignored, all
onto one NodePool offering 400 fake instance types (see ``workloads.py``). One process, one thread.

For each case it prints pods/s (the pods divided by the wall time to build the scheduler from the
raw inputs and solve, averaged over ``--repeat`` runs after one untimed warm-up), pods scheduled, new
nodes, their total price per hour (cheapest option of each), a lower bound on that price, peak memory
(Python allocations while building the inputs and solving, measured in a separate traced run), and
the independent validator's verdict. Karpenter's own figures from PR #2486 (Go, same workload) are
printed for reference.

Usage: ``.venv/bin/python bench/scheduling.py [--json] [--repeat N] [--cases 1000,5000,...] [--profile CASE]``
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import os
import pstats
import resource
import sys
import time
import tracemalloc
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from autoscaler.cloudprovider import InstanceType
from autoscaler.scheduling import ClusterSnapshot, Scheduler, SchedulerOptions, SchedulingResult
from autoscaler.scheduling.pods import pod_requests
from autoscaler_dev.scheduling_validator import validate
from bench.workloads import HOSTNAME, PodFactory, instance_types, nodepool

JSON_KEYS = (
    "case",
    "pods",
    "pods_per_sec",
    "scheduled",
    "nodes",
    "cost_per_hour",
    "cost_lower_bound",
    "valid",
    "peak_mb",
)
KARPENTER_GO_PODS_PER_SEC = {"1000": 1290, "5000": 1340, "20000": 990, "RespectPreferences": 343}


@dataclass(frozen=True)
class Case:
    name: str
    make_pods: Callable[[], list[dict[str, Any]]]
    respect_preferences: bool = True


CASES = {
    "1000": Case("1000", lambda: PodFactory().diverse(1000)),
    "5000": Case("5000", lambda: PodFactory().diverse(5000)),
    "20000": Case("20000", lambda: PodFactory().diverse(20000)),
    "RespectPreferences": Case("RespectPreferences", lambda: PodFactory().preference(4000)),
    "IgnorePreferences": Case("IgnorePreferences", lambda: PodFactory().preference(4000), respect_preferences=False),
}


def snapshot(types: Sequence[InstanceType]) -> ClusterSnapshot:
    return ClusterSnapshot(nodepools=[nodepool()], instance_types={"default": list(types)})


def schedule(case: Case, pods: Sequence[Mapping[str, Any]], types: Sequence[InstanceType]) -> SchedulingResult:
    options = SchedulerOptions(respect_preferences=case.respect_preferences)
    return Scheduler(snapshot(types), options).solve(pods)


def lower_bound(pods: Sequence[Mapping[str, Any]], types: Sequence[InstanceType]) -> float:
    """No placement costs less than (a) the pods' total request of the binding resource at the lowest
    price per unit of allocatable, nor (b) one node per pod of the largest group of pods that require
    different hosts from each other, each at the cheapest instance type that holds it."""
    requests = [pod_requests(p["spec"]) for p in pods]
    bound = 0.0
    for name in ("cpu", "memory", "pods"):
        per_unit = min(
            min(o.price for o in it.offerings) / it.allocatable[name] for it in types if it.allocatable.get(name)
        )
        bound = max(bound, per_unit * sum(r.get(name, 0) for r in requests))
    groups: dict[str, list[Mapping[str, int]]] = {}
    for pod, amount in zip(pods, requests, strict=True):
        for term in _required_anti_affinity(pod):
            labels = (pod["metadata"].get("labels") or {}).items()
            if term.get("topologyKey") == HOSTNAME and set(term["labelSelector"]["matchLabels"].items()) <= set(labels):
                groups.setdefault(json.dumps(term, sort_keys=True), []).append(amount)
    for members in groups.values():
        bound = max(bound, sum(_cheapest_holding(amount, types) for amount in members))
    return bound


def _required_anti_affinity(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    anti = ((pod["spec"].get("affinity") or {}).get("podAntiAffinity")) or {}
    return list(anti.get("requiredDuringSchedulingIgnoredDuringExecution") or ())


def _cheapest_holding(amount: Mapping[str, int], types: Sequence[InstanceType]) -> float:
    return min(
        min(o.price for o in it.offerings)
        for it in types
        if all(v <= it.allocatable.get(k, 0) for k, v in amount.items())
    )


def run(case: Case, types: Sequence[InstanceType], repeat: int) -> dict[str, Any]:
    pods = case.make_pods()
    elapsed, cpu = [], []
    result = schedule(case, pods, types)  # warm-up, untimed: the first pass also pays one-time costs
    for _ in range(repeat):
        gc.collect()
        start, start_cpu = time.perf_counter(), time.process_time()
        result = schedule(case, pods, types)
        elapsed.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    report = validate(snapshot(types), pods, result)
    return {
        "case": case.name,
        "pods": len(pods),
        "pods_per_sec": round(len(pods) / (sum(elapsed) / len(elapsed)), 1),
        "pods_per_cpu_sec": round(len(pods) / (sum(cpu) / len(cpu)), 1),
        "scheduled": len(result.placements),
        "nodes": len(result.new_nodeclaims),
        "cost_per_hour": round(result.cost_per_hour, 2),
        "cost_lower_bound": round(lower_bound(pods, types), 2),
        "valid": report.ok,
        "peak_mb": round(peak_memory(case), 1),
        "violations": report.errors[:3],
    }


def peak_memory(case: Case) -> float:
    """Peak Python allocations (MB) while building the workload and instance types and scheduling it."""
    gc.collect()
    tracemalloc.start()
    schedule(case, case.make_pods(), instance_types(400))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 2**20


def print_table(rows: list[dict[str, Any]]) -> None:
    header = f"{'case':<20}{'pods':>7}{'pods/s':>9}{'(CPU)':>8}{'Go ref':>8}{'x Go':>7}{'scheduled':>11}{'nodes':>7}"
    header += f"{'$/h':>11}{'lower bound':>13}{'cost/LB':>9}{'peak MB':>9}  valid"
    print(header)
    print("-" * len(header))
    for row in rows:
        reference = KARPENTER_GO_PODS_PER_SEC.get(row["case"])
        speedup = f"{row['pods_per_sec'] / reference:.1f}" if reference else "-"
        ratio = row["cost_per_hour"] / row["cost_lower_bound"] if row["cost_lower_bound"] else float("nan")
        print(
            f"{row['case']:<20}{row['pods']:>7}{row['pods_per_sec']:>9.0f}{row['pods_per_cpu_sec']:>8.0f}"
            f"{reference or '-':>8}{speedup:>7}"
            f"{row['scheduled']:>11}{row['nodes']:>7}{row['cost_per_hour']:>11.2f}{row['cost_lower_bound']:>13.2f}"
            f"{ratio:>9.2f}{row['peak_mb']:>9.1f}  {'yes' if row['valid'] else 'NO: ' + '; '.join(row['violations'])}"
        )
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\nprocess max RSS {rss:.0f} MB; load average {os.getloadavg()[0]:.1f} over the last minute")
    print("pods/s is over wall time; (CPU) over the process's CPU time, which other load disturbs less")


def profile(case: Case, top: int) -> None:
    pods, types = case.make_pods(), instance_types(400)
    profiler = cProfile.Profile()
    profiler.enable()
    schedule(case, pods, types)
    profiler.disable()
    pstats.Stats(profiler).sort_stats("tottime").print_stats(top)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", action="store_true", help="one JSON object per case per line")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per case (default 5)")
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated cases to run")
    parser.add_argument("--profile", choices=list(CASES), help="print a cProfile summary of one case instead")
    args = parser.parse_args()
    if args.profile:
        profile(CASES[args.profile], 30)
        return
    types = instance_types(400)
    rows = []
    for name in args.cases.split(","):
        row = run(CASES[name], types, args.repeat)
        rows.append(row)
        if args.json:
            print(json.dumps({k: row[k] for k in JSON_KEYS}), flush=True)
    if not args.json:
        print_table(rows)


if __name__ == "__main__":
    main()
