"""The 24-hour soak (bench/scenarios/soak.yaml) under the light fault level: whether a day of churn leaves anything
behind. Figures only; nothing is asserted.

    .venv/bin/python bench/soak.py [--hours 24] [--seed 1] [--json] [--trace-memory]
        [--logs DIR]   the run's function logs, timeline happenings and end state (as bench/reliability.py keeps)

Every simulated hour: nodes and pods, the cost and its lower bound (the 30-second samples of that hour), and the
state a long-running installation could accumulate: live items in the state table (and, apart, expired ones that
moto keeps and DynamoDB's TTL sweeper would delete), annotations and status conditions per Karpenter object
(NodePools, NodeClaims, Nodes, EC2NodeClasses), Events in the API (which expire after an hour, as the API server's
--event-ttl has them), and memory: the MB the functions' warm runtimes hold (what a warm container keeps between
invocations), and the whole process's, which holds moto and the emulator too (resident MB, Python objects after a
collection; with ``--trace-memory``, tracemalloc's live bytes by the package whose code allocated them, so that
growth has an owner). At the end: the first hour against the last, the day's cost against its lower bound, and the
run's row as bench/reliability.py prints it (``--json``: that row, with the hourly figures under ``hours``), so
that the soak sits among the matrix's rows.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import time
import tracemalloc
import types
from collections import Counter
from pathlib import Path
from typing import Any

from autoscaler.settings import STATE_TABLE_TTL

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SOAK = ROOT / "bench" / "scenarios" / "soak.yaml"
KARPENTER_KINDS = (
    ("karpenter.sh/v1", "NodePool"),
    ("karpenter.sh/v1", "NodeClaim"),
    ("v1", "Node"),
    ("karpenter.k8s.aws/v1", "EC2NodeClass"),
)
GROWTH = (
    "state_items",
    "state_items_expired",
    "annotations_per_object",
    "conditions_per_object",
    "events",
    "rss_mb",
    "containers_mb",
    "python_objects",
)
# Who allocated a live block: the innermost frame of its traceback in one of these, else "other" (stdlib only).
OWNERS = (
    ("/autoscaler_dev/kube_emulator/", "emulator"),
    ("/autoscaler_dev/", "world"),
    ("/autoscaler/", "autoscaler"),
    ("/functions/", "autoscaler"),
    ("/moto/", "moto"),
    ("/botocore/", "boto"),
    ("/boto3/", "boto"),
    ("/aws_lambda_powertools/", "powertools"),
    ("/aiohttp/", "aiohttp"),
    ("/werkzeug/", "werkzeug"),
    ("/site-packages/", "other packages"),
)
TRACE_FRAMES = 12


def owner(traceback: tracemalloc.Traceback) -> str:
    for frame in reversed(traceback):  # innermost first
        for marker, name in OWNERS:
            if marker in frame.filename:
                return name
    return "other"


def memory_by_owner() -> dict[str, float]:
    """Live traced MB by the package that allocated them (``--trace-memory`` only)."""
    if not tracemalloc.is_tracing():
        return {}
    sizes: Counter[str] = Counter()
    for stat in tracemalloc.take_snapshot().statistics("traceback"):
        sizes[owner(stat.traceback)] += stat.size
    return {name: round(size / 2**20, 1) for name, size in sizes.most_common()}


def resident_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


WORLD_PACKAGES = ("autoscaler_dev", "moto", "werkzeug")  # the embedded world, not a function's container
SHARED = (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType, types.CodeType, types.FrameType)


def reachable_mb(root: Any) -> float:
    """The memory of what ``root`` holds (``sys.getsizeof`` over the objects reachable from it), not following
    into modules, classes and functions, nor into the world (a runtime's hooks and clock reach the world's
    objects, its timeline among them, which no container in an account holds): what a warm container keeps
    from one invocation to the next."""
    seen, stack, size = {id(root)}, [root], 0
    while stack:
        obj = stack.pop()
        size += sys.getsizeof(obj, 0)
        for child in gc.get_referents(obj):
            if id(child) not in seen and not isinstance(child, SHARED) and not _of_the_world(child):
                seen.add(id(child))
                stack.append(child)
    return size / 2**20


def _of_the_world(obj: Any) -> bool:
    return type(obj).__module__.startswith(WORLD_PACKAGES)


def containers_mb(sim: Any) -> dict[str, float]:
    """Each function's warm runtime (its clients, caches, indexes): MB by function."""
    runtimes = sim.functions.containers._runtimes if sim.functions.containers is not None else {}
    return {name: round(reachable_mb(r), 1) for name, r in sorted(runtimes.items())}


def state_figures(sim: Any) -> dict[str, Any]:
    """What the installation holds now, besides the cluster's own objects."""
    # Every writer sets the TTL attribute and every reader filters on it; moto never deletes expired items, as
    # DynamoDB's TTL sweeper does within days, so the live items are the figure and the expired ones come apart.
    dynamodb, now = sim.aws.client("dynamodb"), str(int(sim.clock().timestamp()))
    table = dynamodb.scan(
        TableName=sim.stack.table,
        Select="COUNT",
        FilterExpression="attribute_not_exists(#ttl) OR #ttl > :now",
        ExpressionAttributeNames={"#ttl": STATE_TABLE_TTL},
        ExpressionAttributeValues={":now": {"N": now}},
    )
    everything = dynamodb.scan(TableName=sim.stack.table, Select="COUNT")
    objects = [o for api_version, kind in KARPENTER_KINDS for o in sim.kube.list(api_version, kind)]
    annotations = sum(len((o.get("metadata") or {}).get("annotations") or {}) for o in objects)
    conditions = sum(len((o.get("status") or {}).get("conditions") or []) for o in objects)
    gc.collect()
    by_function = containers_mb(sim)
    return {
        "state_items": int(table["Count"]),
        "state_items_expired": int(everything["Count"]) - int(table["Count"]),
        "objects": len(objects),
        "annotations_per_object": round(annotations / max(len(objects), 1), 2),
        "conditions_per_object": round(conditions / max(len(objects), 1), 2),
        "events": len(sim.kube.list("v1", "Event")),
        "rss_mb": round(resident_mb(), 1),
        "containers_mb": round(sum(by_function.values()), 1),
        "containers_mb_by_function": by_function,
        "python_objects": len(gc.get_objects()),
        **({"traced_mb": traced} if (traced := memory_by_owner()) else {}),
    }


def run(hours: float, seed: int, logs: str = "") -> dict[str, Any]:
    from autoscaler_dev.world.faults import FaultRates
    from autoscaler_dev.world.runner import Simulation, World
    from autoscaler_dev.world.scenario import Scenario
    from bench.reliability import LEVELS, keep_end_state, keep_happenings, row

    scenario = Scenario.load(SOAK)
    if hours < 24:
        scenario = scenario.first(hours * 3600)
    scenario = scenario.model_copy(update={"faults": FaultRates(seed=seed, **LEVELS["light"]), "seed": seed})
    hourly: list[dict[str, Any]] = []
    world: list[World] = []

    def every_hour(progress: Any) -> None:  # called at each 30-second sample, inside the run's loop
        if world and (progress.done or progress.t >= 3600 * (len(hourly) + 1)):
            samples = [s for s in world[0].timeline.samples if s.t > 3600 * len(hourly)]
            bounds = [s.cost_lower_bound for s in samples if s.cost_lower_bound]
            hourly.append(
                {
                    "hour": len(hourly) + 1,
                    "nodes": progress.nodes,
                    "pods": progress.pods_total,
                    "cost_per_hour": round(statistics.fmean(s.cost_per_hour for s in samples), 3) if samples else None,
                    "lower_bound": round(statistics.fmean(bounds), 3) if bounds else None,
                    **state_figures(world[0]),
                }
            )

    started = time.perf_counter()
    stem = Path(logs) / f"soak-{seed}" if logs else None
    with open(f"{stem}.log" if stem else "/dev/null", "w") as log:
        simulation = Simulation(scenario, log=log, progress=every_hour)
        timeline = simulation.run(on_start=world.append, after=keep_end_state(stem))
    keep_happenings(stem, timeline)
    result = row("soak", seed, "light", timeline.summary, timeline.checks)
    costs = [s.cost_per_hour for s in timeline.samples]
    bounds = [s.cost_lower_bound for s in timeline.samples if s.cost_lower_bound]
    result.update(
        hours_simulated=hours,
        wall_s=round(time.perf_counter() - started, 1),
        mean_cost_per_hour=round(statistics.fmean(costs), 3),
        mean_lower_bound=round(statistics.fmean(bounds), 3) if bounds else None,
        events_expired=world[0].kube.events.expired,
        hours=hourly,
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hours", type=float, default=24.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--trace-memory", action="store_true", help="attribute live memory by allocating package")
    parser.add_argument("--logs", default="", help="a directory for the run's logs, timeline happenings and end state")
    args = parser.parse_args()
    if args.logs:
        Path(args.logs).mkdir(parents=True, exist_ok=True)
    if args.trace_memory:
        tracemalloc.start(TRACE_FRAMES)
    result = run(args.hours, args.seed, args.logs)
    if args.json:
        print(json.dumps(result))
        return
    columns = ("hour", "nodes", "pods", "cost_per_hour", "lower_bound", "objects", *GROWTH)
    print("  ".join(f"{c:>{max(len(c), 8)}}" for c in columns))
    for hour in result["hours"]:
        print("  ".join(f"{hour[c]!s:>{max(len(c), 8)}}" for c in columns))
    first, last = result["hours"][0], result["hours"][-1]
    print("\nfirst hour -> last hour: " + ", ".join(f"{k} {first[k]} -> {last[k]}" for k in GROWTH))
    if "traced_mb" in first:
        owners = sorted(set(first["traced_mb"]) | set(last["traced_mb"]))
        growth = {o: round(last["traced_mb"].get(o, 0) - first["traced_mb"].get(o, 0), 1) for o in owners}
        print(
            "traced MB, first hour -> last hour: "
            + ", ".join(
                f"{o} {first['traced_mb'].get(o, 0)} -> {last['traced_mb'].get(o, 0)} ({growth[o]:+})"
                for o in sorted(owners, key=lambda o: -growth[o])
            )
        )
    if result["mean_lower_bound"]:
        ratio = result["mean_cost_per_hour"] / result["mean_lower_bound"]
        print(
            f"day: mean cost ${result['mean_cost_per_hour']}/h against a mean lower bound of "
            f"${result['mean_lower_bound']}/h ({ratio:.2f}x); Events expired {result['events_expired']}"
        )
    from bench.reliability import HEADER, table_line

    print(f"\n{HEADER}\n{table_line(result)}\nwall {result['wall_s']} s")


if __name__ == "__main__":
    main()
