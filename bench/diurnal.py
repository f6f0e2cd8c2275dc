"""The diurnal scenario (events/scenarios/diurnal.yaml: a day of load in steps, a spot and an on-demand NodePool)
under each consolidation policy side by side: what consolidation costs in churn and what it saves. Figures only.

    .venv/bin/python bench/diurnal.py [--hours 24] [--jobs 2] [--policies WhenEmpty,Balanced] [--json]

Per policy: evictions per hour by reason, NodeClaims launched per hour, node lifetimes (median, p10), the day's mean
cost per hour (the 30-second samples) and the cost and its lower bound at the end, the savings ledger (commands
completed, predicted and realized $/hour summed), the consolidation moves (NodeClaims removed as empty or
underutilized), the share of WhenEmpty's mean cost each policy saves (when WhenEmpty runs beside it), the
decision-quality invariants, and the wall time of the run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

POLICIES = ("WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced")
DECISION_INVARIANTS = ("launched_unused", "consolidation_without_saving", "displaced_pod_unplaced", "replaced_too_soon")


def run(job: tuple[str, float]) -> dict[str, Any]:
    from autoscaler_dev.world.runner import Simulation
    from autoscaler_dev.world.scenario import Scenario

    policy, hours = job
    scenario = Scenario.load(ROOT / "events" / "scenarios" / "diurnal.yaml").first(hours * 3600)
    started = time.perf_counter()
    with open("/dev/null", "w") as log:
        timeline = Simulation(scenario.with_consolidation_policy(policy), log=log).run()
    summary = timeline.summary
    invariants = summary.get("invariants") or {}
    return {
        "policy": policy,
        "hours": hours,
        "evictions_per_hour": summary.get("evictions_per_hour"),
        "launches_per_hour": summary.get("launches_per_hour"),
        "node_lifetime_median_s": summary.get("node_lifetime_median_s"),
        "node_lifetime_p10_s": summary.get("node_lifetime_p10_s"),
        "mean_cost_per_hour": round(statistics.fmean(s.cost_per_hour for s in timeline.samples), 4),
        "cost_per_hour_at_end": summary.get("cost_per_hour"),
        "cost_lower_bound_at_end": summary.get("cost_lower_bound"),
        "ledger_commands": summary.get("ledger_commands"),
        "consolidation_moves": summary.get("consolidated"),
        "savings_predicted": summary.get("savings_predicted"),
        "savings_realized": summary.get("savings_realized"),
        "decision_invariants": {k: invariants.get(k, 0) for k in DECISION_INVARIANTS},
        "invariant_violations": summary.get("invariant_violations"),
        "unmet": [name for name, met in timeline.checks.items() if not met],
        "wall_s": round(time.perf_counter() - started, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hours", type=float, default=24.0)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--policies", default=",".join(POLICIES))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    jobs = [(policy, args.hours) for policy in args.policies.split(",")]
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        rows = list(pool.map(run, jobs))
    baseline = next((r["mean_cost_per_hour"] for r in rows if r["policy"] == "WhenEmpty"), None)
    for row in rows:  # the reference is WhenEmpty's run, measured in the same invocation
        saved = None if not baseline else round((baseline - row["mean_cost_per_hour"]) / baseline, 4)
        row["saved_vs_when_empty"] = saved
    if args.json:
        for row in rows:
            print(json.dumps(row))
        return
    keys = [k for k in rows[0] if k not in ("policy", "hours")]
    print(f"diurnal, {args.hours:g} simulated hours")
    print(f"{'':28s}" + "".join(f"{r['policy']:>30s}" for r in rows))
    for key in keys:
        print(f"{key:28s}" + "".join(f"{json.dumps(r[key]):>30s}" for r in rows))


if __name__ == "__main__":
    main()
