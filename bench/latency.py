"""Provisioning latency: how long pods that need a new node wait for it, against Karpenter's batcher.

Runs ``scale-out`` (1,000 pods at once), ``spread`` (30 pods over three zones) and ``trickle`` (a pod every 20 s)
in the embedded world with its latency model on (every AWS call and Kubernetes request takes its time on the
virtual clock, and a cluster change reaches the provisioner after the forwarder's window and EventBridge's and
SQS's delivery). Per pod that waited for a launch: created -> NodeClaim created, and -> CreateFleet called, p50 /
p99; beside it, Karpenter's batcher (1 s idle, 10 s at most) over the same arrival times with this run's median
time from pass start to CreateFleet (``autoscaler_dev/world/launch_latency.py``); and where the time went.
Goals (issue 25): p50 no worse than the reference, p99 <= 15 s.

Usage: ``.venv/bin/python bench/latency.py [--scenarios scale-out,spread,trickle] [--jobs 2] [--json]``
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SCENARIOS = ("scale-out", "spread", "trickle")
FIGURES = (
    "launch_latency_pods",
    "pending_to_nodeclaim_p50_s",
    "pending_to_nodeclaim_p99_s",
    "pending_to_launch_p50_s",
    "pending_to_launch_p99_s",
    "reference_pending_to_launch_p50_s",
    "reference_pending_to_launch_p99_s",
    "pending_to_pass_p50_s",
    "pass_to_nodeclaim_p50_s",
    "nodeclaim_to_launch_p50_s",
)


def run(name: str) -> dict[str, Any]:
    from autoscaler_dev.world.runner import Simulation
    from autoscaler_dev.world.scenario import Scenario

    scenario = Scenario.load(ROOT / "events" / "scenarios" / f"{name}.yaml")
    started = time.perf_counter()
    with open("/dev/null", "w") as log:
        timeline = Simulation(scenario, log=log).run()
    summary = timeline.summary
    p50, reference = summary.get("pending_to_launch_p50_s"), summary.get("reference_pending_to_launch_p50_s")
    p99 = summary.get("pending_to_launch_p99_s")
    return {
        "scenario": name,
        **{key: summary.get(key) for key in FIGURES},
        "p50_goal_met": None if p50 is None or reference is None else p50 <= reference,
        "p99_goal_met": None if p99 is None else p99 <= 15.0,
        "unmet": [check for check, met in timeline.checks.items() if not met],
        "wall_s": round(time.perf_counter() - started, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        rows = list(pool.map(run, args.scenarios.split(",")))
    if args.json:
        for row in rows:
            print(json.dumps(row))
        return
    print("provisioning latency, virtual seconds (reference: Karpenter's batcher over the same arrivals)")
    print(f"{'':36s}" + "".join(f"{r['scenario']:>14s}" for r in rows))
    for key in [k for k in rows[0] if k != "scenario"]:
        print(f"{key:36s}" + "".join(f"{json.dumps(r[key]):>14s}" for r in rows))


if __name__ == "__main__":
    main()
