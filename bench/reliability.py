"""Scenarios under a matrix of fault rates and seeds, in the embedded world: what was injected, and whether the
autoscaler still converged with nothing lost, leaked or violated. Figures only; nothing is asserted.

    .venv/bin/python bench/reliability.py [--scenarios spot-storm,consolidation] [--seeds 1,2] [--jobs 2] [--json]

Fault levels (``FaultRates``, docs/reliability.md): ``none`` (the reference, same scenario and seed), ``light``
(EC2 throttling 2%, capacity errors 10%, partial fleets 10%, Kubernetes errors 1%, kills 2%, SQS and EventBridge
duplicates 5%, reordering) and ``heavy`` (10%, 40%, 40%, 5%, 10%, 20%, reordering). Per run: faults injected by
kind; violations (the named invariants of ``simulation.invariants``, budgets, PDBs, function errors); the
scenario's expected outcomes not met (listed below the row); pods never running at the end; instances leaked at
the end; interruptions lost (interrupted instances whose NodeClaim was never deleted); invocations killed; and when
every pod last started running (virtual seconds); the decision-quality invariants violated, by name, below the row.
``--json`` prints one object per run per line with the keys scenario, seed, level, faults, violations, decisions,
unscheduled, leaked, lost, converge_s.
"""

from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DECISIONS = ("launched_unused", "consolidation_without_saving", "displaced_pod_unplaced", "replaced_too_soon")
LIGHT = {"ec2_throttle": 0.02, "fleet_capacity": 0.1, "fleet_partial": 0.1, "kube_errors": 0.01, "kill": 0.02}
HEAVY = {"ec2_throttle": 0.1, "fleet_capacity": 0.4, "fleet_partial": 0.4, "kube_errors": 0.05, "kill": 0.1}
LEVELS: dict[str, dict[str, float | bool]] = {
    "none": {},
    "light": {**LIGHT, "duplicates": 0.05, "event_duplicates": 0.05, "reorder": True},
    "heavy": {**HEAVY, "duplicates": 0.2, "event_duplicates": 0.2, "reorder": True},
}


def run(job: tuple[str, int, str]) -> dict[str, Any]:
    from autoscaler_dev.world.faults import FaultRates
    from autoscaler_dev.world.runner import Simulation
    from autoscaler_dev.world.scenario import Scenario

    name, seed, level = job
    scenario = Scenario.load(ROOT / "events" / "scenarios" / f"{name}.yaml")
    scenario = scenario.model_copy(update={"faults": FaultRates(seed=seed, **LEVELS[level]), "seed": seed})
    with open("/dev/null", "w") as log:
        timeline = Simulation(scenario, log=log).run()
    summary = timeline.summary
    unmet = sum(1 for met in timeline.checks.values() if not met)
    violations = summary.get("budget_violations", 0) + summary.get("pdb_violations", 0)
    violations += summary.get("function_errors", 0) + summary.get("invariant_violations", 0)
    # Acted on, by the invariant (a metric can be lost with an invocation killed after acting, before flushing).
    lost = int((summary.get("invariants") or {}).get("interruption_not_acted_on", 0))
    return {
        "scenario": name,
        "seed": seed,
        "level": level,
        "faults": summary.get("faults_injected", {}),
        "violations": violations,
        "unmet_count": unmet,
        "unmet": [check for check, met in timeline.checks.items() if not met],
        "unscheduled": summary["pods_total"] - summary["pods_running"],
        "leaked": summary["leaked_at_end"],
        "lost": lost,
        "converge_s": summary.get("all_running_at_s"),
        "died": summary.get("invocations_died", 0),
        # The decision-quality invariants by name (they count in violations too): what was launched or disrupted
        # for nothing.
        "decisions": {k: v for k, v in (summary.get("invariants") or {}).items() if k in DECISIONS and v},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenarios", default="spot-storm,consolidation,leak")
    parser.add_argument("--seeds", default="1,2")
    parser.add_argument("--levels", default="none,light,heavy")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    jobs = [
        (name, int(seed), level)
        for name in args.scenarios.split(",")
        for seed in args.seeds.split(",")
        for level in args.levels.split(",")
    ]
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        rows = list(pool.map(run, jobs))
    if args.json:
        keys = ("scenario", "seed", "level", "faults", "violations", "decisions", "unscheduled", "leaked", "lost")
        keys += ("converge_s",)
        for row in rows:
            print(json.dumps({k: row[k] for k in keys}))
        return
    header = f"{'scenario':<15}{'seed':>5} {'level':<6}{'faults injected':<58}"
    header += f"{'viol':>5}{'unmet':>6}{'unsch':>6}{'leak':>5}{'lost':>5}{'died':>5}{'converge s':>11}"
    print(header)
    for row in rows:
        faults = ", ".join(f"{k}={v}" for k, v in row["faults"].items()) or "-"
        converge = "-" if row["converge_s"] is None else f"{row['converge_s']:.0f}"
        print(
            f"{row['scenario']:<15}{row['seed']:>5} {row['level']:<6}{faults:<58}"
            f"{row['violations']:>5}{row['unmet_count']:>6}{row['unscheduled']:>6}{row['leaked']:>5}{row['lost']:>5}{row['died']:>5}{converge:>11}"
        )
        if row["unmet"]:
            print(f"{'':>27}not met: {'; '.join(row['unmet'])}")
        if row["decisions"]:
            print(f"{'':>27}decisions: {', '.join(f'{k}={v}' for k, v in row['decisions'].items())}")


if __name__ == "__main__":
    main()
