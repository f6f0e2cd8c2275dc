"""Every scenario under a matrix of fault rates and seeds, in the embedded world: what was injected, and whether the
autoscaler still converged with nothing lost, leaked or violated. Figures only; nothing is asserted.

    .venv/bin/python bench/reliability.py [--scenarios spot-storm,consolidation] [--seeds 1,2,3] [--jobs 2] [--json]
        [--logs DIR]   each run's function logs, timeline happenings and end state, to read a row that failed

Scenarios: every ``events/scenarios/*.yaml`` by default (``bad-input`` too: its malformed messages are meant to be
dead-lettered, and it expects so); ``diurnal`` runs its first ``--diurnal-hours`` (3) virtual hours, as the end-to-end
tests run it (bench/diurnal.py runs the day). Fault levels (``LEVELS``, docs/reliability.md): ``none`` (the reference,
same scenario and seed), ``light`` and ``heavy``; a faulted run goes on 10 minutes past the scenario's duration
(``SETTLE_SECONDS``), and up to 30 more while a pod is pending (``CONVERGE_SECONDS``), before its end state is judged.
Per run: faults injected by kind; every invariant by name with its count (the world's named invariants, the
decision-quality ones, ``iam_denied``, ``rbac_denied``, budgets, PDBs and function errors); the scenario's own expected
outcomes not met (``unmet``: its premises, which a fault can take away, e.g. a cordon within 10 s while the API server
is down, are not invariants); pods never running at the end; instances leaked at the end; interruptions lost
(interrupted instances whose NodeClaim was never deleted); and when every pod last started running (virtual seconds).
``--logs DIR`` keeps, per run, its function logs, its timeline happenings and its end state (``.state``: nodes,
NodeClaims, pods still pending). ``--json`` prints one object per run per line with the keys scenario, seed, level,
faults, invariants, violations, unmet, unscheduled, leaked, lost, died, outage_errors, converge_s; a run the world
itself failed is a row with scenario, seed, level and ``error`` (its traceback), and the matrix goes on.
"""

from __future__ import annotations

import argparse
import json
import sys
import traceback
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "events" / "scenarios"
sys.path.insert(0, str(ROOT))

LIGHT = {"ec2_throttle": 0.02, "fleet_capacity": 0.1, "fleet_partial": 0.1, "kube_errors": 0.01, "kill": 0.02}
HEAVY = {"ec2_throttle": 0.1, "fleet_capacity": 0.4, "fleet_partial": 0.4, "kube_errors": 0.05, "kill": 0.1}
# Lists paginate in small pages and some continuations expire (light 2%, heavy 20%); a new instance profile is
# rejected by CreateFleet for its first 10 s (light) or 30 s (heavy); the state table fails 1% (5%) of requests;
# SQS batches are handed to a second invocation while the first works on them (2%, 10%); cluster events are
# delivered 5 to 60 s late (5%, 20%); each function's clock is off by up to 0.5 s (2 s).
LIGHT_MORE = {
    "kube_page": 50,
    "continue_expired": 0.02,
    "profile_delay": 10,
    "table_errors": 0.01,
    "visibility_expiry": 0.02,
    "event_late": 0.05,
    "clock_skew": 0.5,
}
HEAVY_MORE = {
    "kube_page": 20,
    "continue_expired": 0.2,
    "profile_delay": 30,
    "table_errors": 0.05,
    "visibility_expiry": 0.1,
    "event_late": 0.2,
    "clock_skew": 2,
}
# Heavy also takes the API server away for 2 minutes, a third of the way into the run.
OUTAGE = {"for": "2m"}
LEVELS: dict[str, dict[str, Any]] = {
    "none": {},
    "light": {**LIGHT, **LIGHT_MORE, "duplicates": 0.05, "event_duplicates": 0.05, "reorder": True},
    "heavy": {**HEAVY, **HEAVY_MORE, "duplicates": 0.2, "event_duplicates": 0.2, "reorder": True},
}
# A faulted run goes on this long past the scenario's duration (tuned for the fault-free path: node-overlay scales
# out 2.5 minutes before its end) before its end state is judged; the outage stays a third of the way in. Then, while
# a pod is still pending, up to CONVERGE_SECONDS more: under heavy faults EC2 refuses 40% of launches and each
# refusal rules the offerings out for 3 minutes, so a NodePool of one instance type can wait several such rounds;
# a pod still pending after that is unscheduled.
SETTLE_SECONDS = 600
CONVERGE_SECONDS = 1800
# Summary counts that are violations besides the named invariants: an IAM or RBAC denial is an outage in an account.
ENFORCEMENT = ("iam_denied", "rbac_denied", "budget_violations", "pdb_violations", "function_errors")


def run(job: tuple[str, int, str, float, str]) -> dict[str, Any]:
    from autoscaler_dev.world.faults import FaultRates
    from autoscaler_dev.world.runner import Simulation
    from autoscaler_dev.world.scenario import Action, Scenario

    name, seed, level, diurnal_hours, logs = job
    scenario = Scenario.load(SCENARIOS / f"{name}.yaml")
    if name == "diurnal":
        scenario = scenario.first(diurnal_hours * 3600)
    scenario = scenario.model_copy(update={"faults": FaultRates(seed=seed, **LEVELS[level]), "seed": seed})
    if level == "heavy":
        outage = Action(at=scenario.duration / 3, kind="kube-outage", args=OUTAGE)
        scenario = scenario.model_copy(update={"actions": [*scenario.actions, outage]})
    if level != "none":  # faults slow convergence down: time to converge after the scenario's last action
        scenario = scenario.model_copy(
            update={"duration": scenario.duration + SETTLE_SECONDS, "settle": CONVERGE_SECONDS}
        )
    try:
        stem = Path(logs) / f"{name}-{seed}-{level}" if logs else None
        with open(f"{stem}.log" if stem else "/dev/null", "w") as log:
            timeline = Simulation(scenario, log=log).run(after=keep_end_state(stem))
        keep_happenings(stem, timeline)
    except Exception:  # the world itself failed: a row that says so (the matrix goes on), never a silent gap
        return {"scenario": name, "seed": seed, "level": level, "error": traceback.format_exc()}
    return row(name, seed, level, timeline.summary, timeline.checks)


def keep_end_state(stem: Path | None) -> Any:
    """The run's ``after`` hook that writes its end state to ``<stem>.state`` (None: nothing kept)."""
    return (lambda sim: Path(f"{stem}.state").write_text(end_state(sim))) if stem else None


def keep_happenings(stem: Path | None, timeline: Any) -> None:
    """The run's timeline happenings (joins, interruptions, violations and their subjects) to ``<stem>.happenings``."""
    if stem is not None:
        lines = (f"{h.t:9.1f} {h.what:<20} {h.subject:<44} {h.text}\n" for h in timeline.happenings)
        Path(f"{stem}.happenings").write_text("".join(lines))


def end_state(sim: Any) -> str:
    """What the world holds when the run is judged: each node (readiness, cordon, taints, pods bound), each NodeClaim
    (its conditions and the pods nominated to it) and each pod still pending (its conditions), one per line."""
    from autoscaler.apis.v1 import labels as wk
    from autoscaler.kube.objects import Body, Node, Pod

    pods = sim.kube.list("v1", "Pod")
    bound = Counter(Pod(p).node_name for p in pods)
    lines = []
    for raw in sim.kube.list("v1", "Node"):
        node = Node(raw)
        spec, labels = raw.get("spec") or {}, node.labels
        initialized, pool = labels.get(wk.LABEL_INITIALIZED), labels.get(wk.LABEL_NODEPOOL)
        lines.append(
            f"node {node.name} ready={node.ready} deleting={node.deleting} unschedulable={spec.get('unschedulable')}"
            f" nodepool={pool} initialized={initialized} pods={bound[node.name]} taints={spec.get('taints')}"
        )
    for raw in sim.kube.list(wk.API_VERSION, "NodeClaim"):
        claim = Body(raw)
        conditions = {c.get("type"): c.get("status") for c in claim.status.get("conditions") or []}
        deleting = bool(claim.metadata.get("deletionTimestamp"))
        lines.append(
            f"nodeclaim {claim.name} node={claim.status.get('nodeName')} deleting={deleting}"
            f" conditions={conditions} annotations={claim.annotations}"
        )
    for raw in pods:
        pod = Pod(raw)
        if not pod.node_name:
            lines.append(f"pending {pod.namespace}/{pod.name} uid={pod.uid} conditions={pod.conditions}")
    return "".join(f"{line}\n" for line in lines)


def row(name: str, seed: int, level: str, summary: dict[str, Any], checks: dict[str, bool]) -> dict[str, Any]:
    """One run's row: every invariant by name with its count, and the outcome figures."""
    unmet = [check for check, met in checks.items() if not met]
    invariants = {**(summary.get("invariants") or {}), **{k: int(summary.get(k) or 0) for k in ENFORCEMENT}}
    return {
        "scenario": name,
        "seed": seed,
        "level": level,
        "faults": summary.get("faults_injected", {}),
        "invariants": dict(sorted(invariants.items())),
        "violations": sum(invariants.values()),
        "unmet": unmet,
        "unscheduled": summary["pods_total"] - summary["pods_running"],
        "leaked": summary["leaked_at_end"],
        # Acted on, by the invariant (a metric can be lost with an invocation killed after acting, before flushing).
        "lost": int(invariants.get("interruption_not_acted_on", 0)),
        "died": summary.get("invocations_died", 0),
        # Invocations that failed while the API server was down: expected, so not among function_errors.
        "outage_errors": summary.get("function_errors_in_kube_outage", 0),
        "converge_s": summary.get("all_running_at_s"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenarios", default=",".join(sorted(p.stem for p in SCENARIOS.glob("*.yaml"))))
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--levels", default="none,light,heavy")
    parser.add_argument("--diurnal-hours", type=float, default=3.0)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--logs", default="", help="a directory for each run's logs and timeline happenings")
    args = parser.parse_args()
    if args.logs:
        Path(args.logs).mkdir(parents=True, exist_ok=True)
    jobs = [
        (name, int(seed), level, args.diurnal_hours, args.logs)
        for name in args.scenarios.split(",")
        for seed in args.seeds.split(",")
        for level in args.levels.split(",")
    ]
    if not args.json:
        print(HEADER)
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for result in pool.map(run, jobs):  # in order, each as it is done (a long matrix shows its progress)
            print(json.dumps(result) if args.json else table_line(result), flush=True)


def table_line(row: dict[str, Any]) -> str:
    if "error" in row:
        failure = row["error"].splitlines()[-1]
        return f"{row['scenario']:<22}{row['seed']:>5} {row['level']:<6} the run failed: {failure}"
    faults = ", ".join(f"{k}={v}" for k, v in row["faults"].items()) or "-"
    converge = "-" if row["converge_s"] is None else f"{row['converge_s']:.0f}"
    line = (
        f"{row['scenario']:<22}{row['seed']:>5} {row['level']:<6}{row['violations']:>5}{len(row['unmet']):>6}"
        f"{row['unscheduled']:>6}"
        f"{row['leaked']:>5}{row['lost']:>5}{row['died']:>5}{converge:>11}  {faults}"
    )
    violated = {k: v for k, v in row["invariants"].items() if v}
    if violated:
        line += f"\n{'':>28}violated: {', '.join(f'{k}={v}' for k, v in violated.items())}"
    if row["unmet"]:
        line += f"\n{'':>28}not met: {'; '.join(row['unmet'])}"
    return line


HEADER = f"{'scenario':<22}{'seed':>5} {'level':<6}{'viol':>5}{'unmet':>6}{'unsch':>6}{'leak':>5}{'lost':>5}{'died':>5}"
HEADER += f"{'converge s':>11}  faults injected"

if __name__ == "__main__":
    main()
