"""``autoscaler simulate``: run scenarios in the embedded world and report what the autoscaler did.

    autoscaler simulate events/scenarios/scale-out.yaml [--report out.html] [--speed N] [-o json]
    autoscaler simulate a.yaml b.yaml c.yaml --jobs 2 --report build/demo/report.html     # a tour
    autoscaler simulate events/scenarios/spread.yaml --serve                              # then look around
    autoscaler simulate events/scenarios/scale-out.yaml --iam-template cdk.out/serverless-karpenter-world.template.json

Each scenario starts its own moto server and Kubernetes API emulator and runs the real function handlers on a
virtual clock (docs/simulation.md). The summary table (or, with ``-o json``, one JSON object: the summary of a
single scenario, or an object of summaries by scenario name) goes to stdout, progress and the timeline to stderr.
``--report`` writes the HTML report (with several scenarios: an index at that path and one page each beside it).
Exit status 1 when any scenario's expected outcomes were not met. ``--serve`` writes a kubeconfig for ``kubectl``
(``--kubeconfig PATH``, the API on ``--port``) and runs the world, at ``--speed`` (10 by default), past the scenario's
duration until SIGINT (Ctrl-C) or SIGTERM; then the summary is printed and the report written as for any run. Edits
made with kubectl are picked up by the workload controllers at once and by the functions' next passes. The emulator
enforces RBAC (``infra/manifests``, or the manifests ``--rbac`` names) and priority and fairness on every request;
denials are ``rbac_denied`` in the summary.

Every AWS call of every function goes through the AWS call gate (docs/simulation.md): IAM against that function's
role in the stack synthesized from this repository's ``infra/`` (``--iam-template`` another template), EC2's request
rate limits and each call's latency; ``--no-iam``, ``--no-throttling``, ``--no-latency`` switch one off.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import queue
import signal
import sys
import tempfile
import threading
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing.queues import Queue
from pathlib import Path
from typing import Any


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("simulate", help="run scenarios in the embedded AWS and Kubernetes world")
    parser.add_argument("scenarios", nargs="+", type=Path, metavar="SCENARIO.yaml")
    parser.add_argument("--report", type=Path, help="write the HTML report here")
    parser.add_argument("--speed", type=float, help="at most this many virtual seconds per wall second")
    parser.add_argument("-o", "--output", choices=("table", "json"), default="table")
    parser.add_argument("--jobs", type=int, default=1, help="scenarios run side by side, each in its own process")
    parser.add_argument("--serve", action="store_true", help="keep the world running until SIGINT or SIGTERM")
    parser.add_argument("--kubeconfig", type=Path, help="with --serve: write the kubeconfig here")
    parser.add_argument("--port", type=int, default=0, help="with --serve: the Kubernetes API's port (default: free)")
    parser.add_argument("--log", type=Path, help="the functions' logs (default: a temporary file, path printed)")
    parser.add_argument(
        "--rbac",
        type=Path,
        action="append",
        metavar="PATH",
        help="RBAC manifests (file or directory; repeatable) to enforce instead of infra/manifests'",
    )
    parser.add_argument(
        "--kube-rate",
        type=float,
        default=100.0,
        metavar="QPS",
        help="Kubernetes requests per second per identity before 429s (burst: twice that)",
    )
    parser.add_argument(
        "--iam-template",
        type=Path,
        metavar="PATH",
        help="enforce the roles of this synthesized template (default: the stack of this repository's infra/)",
    )
    parser.add_argument(
        "--consolidation-policy",
        choices=("WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"),
        help="run with every NodePool's consolidationPolicy set to this (to compare policies on one scenario)",
    )
    parser.add_argument("--no-iam", action="store_true", help="do not enforce IAM on the functions' AWS calls")
    parser.add_argument("--no-throttling", action="store_true", help="no EC2 request rate limits")
    parser.add_argument("--no-latency", action="store_true", help="AWS calls take no virtual time")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from autoscaler_dev.iam.template import TemplateError
    from autoscaler_dev.world.progress import display
    from autoscaler_dev.world.report import write_index
    from autoscaler_dev.world.scenario import Scenario, ScenarioError

    try:
        for path in args.scenarios:
            Scenario.load(path)
    except ScenarioError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.kube_rate <= 0:
        print("error: --kube-rate must be a positive number of requests per second", file=sys.stderr)
        return 2
    from autoscaler_dev.world.kube_access import RBACManifestError, load_manifests

    try:
        load_manifests(args.rbac or ())
    except RBACManifestError as error:
        print(f"error: --rbac {error}", file=sys.stderr)
        return 2
    if args.iam_template is not None and not args.iam_template.is_file():
        print(f"error: --iam-template {args.iam_template}: no such file", file=sys.stderr)
        return 2
    try:
        gates = gate_settings(args)
    except TemplateError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.serve and len(args.scenarios) != 1:
        print("error: --serve takes one scenario", file=sys.stderr)
        return 2
    if (args.kubeconfig or args.port) and not args.serve:
        print("error: --kubeconfig and --port go with --serve", file=sys.stderr)
        return 2
    log_dir = args.log.parent if args.log else Path(tempfile.mkdtemp(prefix="autoscaler-simulate-"))
    pages = _pages(args.report, args.scenarios)
    jobs = [
        _Job(
            scenario=path,
            page=pages.get(path),
            log=args.log or log_dir / f"{path.stem}.log",
            speed=args.speed,
            serve=_Serve(args.kubeconfig, args.port) if args.serve else None,
            rbac=tuple(args.rbac or ()),
            kube_rate=args.kube_rate,
            gates=gates,
            consolidation_policy=args.consolidation_policy,
        )
        for path in args.scenarios
    ]
    with display(sys.stderr, [Scenario.load(path).name for path in args.scenarios]) as show:
        if args.jobs > 1 and len(jobs) > 1:
            results = _run_parallel(jobs, args.jobs, show.update)
        else:
            results = [_run_one(job, show.update) for job in jobs]
    for result in results:
        if not show.shows_happenings:
            print(result["timeline"], file=sys.stderr)
        print(f"functions' logs: {result['log']}", file=sys.stderr)
    if args.report and len(results) > 1:
        write_index(args.report, results)
    if args.report:
        print(f"report: {args.report.resolve()}", file=sys.stderr)
    if args.output == "json":
        summaries = {r["scenario"]: r["summary"] for r in results}
        print(json.dumps(summaries[results[0]["scenario"]] if len(results) == 1 else summaries, indent=2))
    else:
        print("\n\n".join(r["table"] for r in results))
    return 0 if all(all(r["checks"].values()) for r in results) else 1


def _pages(report: Path | None, scenarios: list[Path]) -> dict[Path, Path]:
    if report is None:
        return {}
    if len(scenarios) == 1:
        return {scenarios[0]: report}
    return {path: report.with_name(f"{report.stem}-{path.stem}{report.suffix or '.html'}") for path in scenarios}


def gate_settings(args: argparse.Namespace) -> Any:
    """What the AWS call gate enforces, from the command line. The default template is synthesized (or found in
    its cache) here, once, before scenarios run side by side; a failed synth raises TemplateError."""
    from autoscaler_dev.world.gates import GateSettings, default_template

    enforce_iam = not args.no_iam
    return GateSettings(
        iam=enforce_iam,
        iam_template=args.iam_template or (default_template() if enforce_iam else None),
        throttling=not args.no_throttling,
        latency=not args.no_latency,
    )


@dataclass(frozen=True)
class _Serve:
    kubeconfig: Path | None
    port: int


@dataclass(frozen=True)
class _Job:
    """One scenario's run, as handed to a worker process."""

    scenario: Path
    page: Path | None
    log: Path
    speed: float | None
    serve: _Serve | None
    rbac: tuple[Path, ...]
    kube_rate: float
    gates: Any  # GateSettings (imported in the worker)
    consolidation_policy: str | None = None


def _stop_on_signals() -> threading.Event:
    """An event set by SIGINT or SIGTERM (the run then ends as a finished one: summary and report)."""
    stop = threading.Event()
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, lambda *_: stop.set())
    return stop


_worker_updates: list[Queue[Any]] = []  # in a worker process: where its progress goes to the parent


def _worker(updates: Queue[Any]) -> None:
    _worker_updates[:] = [updates]


def _run_parallel(jobs: list[_Job], workers: int, show: Callable[[Any], None]) -> list[dict[str, Any]]:
    """Scenarios side by side, each in its own process; their progress comes back through one queue, so that the
    parent alone writes to the terminal."""
    context = multiprocessing.get_context()
    updates: Queue[Any] = context.Queue()
    with ProcessPoolExecutor(workers, mp_context=context, initializer=_worker, initargs=(updates,)) as pool:
        futures = [pool.submit(_run_one, job) for job in jobs]
        while True:
            try:
                show(updates.get(timeout=0.25))
            except queue.Empty:
                if all(f.done() for f in futures):
                    break
        return [f.result() for f in futures]


def _run_one(job: _Job, progress: Callable[[Any], None] | None = None) -> dict[str, Any]:
    """One scenario, start to summary (in a worker process when several run side by side)."""
    from autoscaler_dev.kube_emulator.flowcontrol import FlowSettings
    from autoscaler_dev.world.kube_access import KubeEnforcement
    from autoscaler_dev.world.report import summary_table, timeline_text, write_report
    from autoscaler_dev.world.runner import Simulation, World
    from autoscaler_dev.world.scenario import Scenario

    path, page, log_path, serve = job.scenario, job.page, job.log, job.serve
    scenario = Scenario.load(path)
    if job.consolidation_policy:
        scenario = scenario.with_consolidation_policy(job.consolidation_policy)
    log_path.parent.mkdir(parents=True, exist_ok=True)

    if progress is None and _worker_updates:
        progress = _worker_updates[0].put

    def on_start(sim: World) -> None:
        if serve:
            path = serve.kubeconfig or log_path.with_suffix(".kubeconfig")
            path.parent.mkdir(parents=True, exist_ok=True)
            kubeconfig = sim.kube.write_kubeconfig(path)
            print(
                f"\nkubeconfig: {kubeconfig}\n"
                f"  KUBECONFIG={kubeconfig} kubectl get nodepools,nodeclaims,ec2nodeclasses,nodes,pods -o wide",
                file=sys.stderr,
            )

    def after(_: World) -> None:
        if serve:
            print("\nthe scenario is over; the world keeps running (Ctrl-C or SIGTERM to stop)", file=sys.stderr)

    stop = _stop_on_signals() if serve else None
    with log_path.open("w") as log:
        enforcement = KubeEnforcement(
            rbac_paths=job.rbac, flow=FlowSettings(rate=job.kube_rate, burst=max(1, int(2 * job.kube_rate)))
        )
        simulation = Simulation(
            scenario,
            log=log,
            progress=progress,
            speed=job.speed,
            port=serve.port if serve else 0,
            kube_enforcement=enforcement,
            gates=job.gates,
        )
        timeline = simulation.run(on_start=on_start, after=after, serve=serve is not None, stop=stop)
    if page is not None:
        write_report(timeline, page)
    return {
        "scenario": scenario.name,
        "summary": timeline.summary,
        "checks": timeline.checks,
        "table": summary_table(timeline),
        "timeline": timeline_text(timeline),
        "page": str(page) if page else None,
        "log": str(log_path),
    }
