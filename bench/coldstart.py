"""Cold start: what a new Lambda container of each function pays before its first invocation does any work.

Each measurement runs in a fresh interpreter (as a new container does): import ``functions/<name>/handler.py``
as Lambda does (``autoscaler_dev.harness.load_handler``), then ``Runtime.build()`` from the environment the
stack sets (boto3 clients, the Kubernetes adapter; no request is made: the endpoint is a plain URL nothing
listens on), then the function's controller from the registry. Best of ``--repeat`` runs, wall and CPU
milliseconds (CPU is less disturbed by other load). A second run under ``python -X importtime`` names the
heaviest packages: each package's first import, with what it imports in turn. The reference row is the
pure core alone (``autoscaler.apis``, ``scheduling``, ``controllers``, ``cloudprovider``; goal < 300 ms)
and a bare interpreter.

Usage: ``.venv/bin/python bench/coldstart.py [--json] [--repeat 3] [--top 5]``
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FUNCTIONS = ("provisioner", "disruption", "interruption", "termination", "garbage_collection", "nodeclass")
CONTROLLER = {"provisioner": "provisioner"}  # the registry's name where it differs from the function's
ENVIRONMENT = {
    "CLUSTER_NAME": "coldstart",
    "AWS_REGION": "us-west-2",
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "CLUSTER_ENDPOINT": "http://127.0.0.1:9",
    "STATE_TABLE_NAME": "coldstart-state",
    "INTERRUPTION_QUEUE_URL": "https://sqs.us-west-2.amazonaws.com/111122223333/coldstart",
    "POWERTOOLS_METRICS_NAMESPACE": "Karpenter",
}
PURE_CORE = ("autoscaler.apis", "autoscaler.scheduling", "autoscaler.controllers", "autoscaler.cloudprovider")

# One function's initialisation, timed inside the fresh interpreter; prints one JSON object.
FUNCTION_PROBE = """
import json, sys, time
wall, cpu = time.perf_counter(), time.process_time()
from autoscaler_dev.harness import load_handler
load_handler(sys.argv[1])
imported = time.perf_counter(), time.process_time()
from autoscaler.runtime import Runtime
rt = Runtime.build()
built = time.perf_counter(), time.process_time()
getattr(rt.controllers, sys.argv[2]) if sys.argv[2] != "-" else None
ready = time.perf_counter(), time.process_time()
print(json.dumps({
    "import_ms": (imported[0] - wall) * 1e3, "import_cpu_ms": (imported[1] - cpu) * 1e3,
    "build_ms": (built[0] - imported[0]) * 1e3, "controller_ms": (ready[0] - built[0]) * 1e3,
    "total_ms": (ready[0] - wall) * 1e3, "total_cpu_ms": (ready[1] - cpu) * 1e3,
}))
"""
MODULES_PROBE = """
import importlib, json, sys, time
wall, cpu = time.perf_counter(), time.process_time()
for name in sys.argv[1:]:
    importlib.import_module(name)
total = (time.perf_counter() - wall) * 1e3
print(json.dumps({"import_ms": total, "import_cpu_ms": (time.process_time() - cpu) * 1e3, "build_ms": 0.0,
                  "controller_ms": 0.0, "total_ms": total, "total_cpu_ms": (time.process_time() - cpu) * 1e3}))
"""


def probe(code: str, args: list[str], *, importtime: bool = False) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, *(["-X", "importtime"] if importtime else []), "-c", code, *args]
    env = {**os.environ, **ENVIRONMENT}
    return subprocess.run(command, capture_output=True, text=True, check=True, cwd=ROOT, env=env)


def heaviest(importtime_log: str, top: int) -> list[tuple[str, float]]:
    """The packages whose first import costs most (milliseconds, cumulative: with what each imports), from
    ``-X importtime``'s lines ``import time: self | cumulative | name`` (indented by nesting)."""
    first: dict[str, float] = {}
    for line in importtime_log.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cumulative, name = line.split("|", 2)
        module = name.strip()
        if "." not in module and not module.startswith("_"):
            first.setdefault(module, int(cumulative) / 1000)
    ranked = sorted(first.items(), key=lambda item: -item[1])
    return [(name, round(ms, 1)) for name, ms in ranked[:top]]


def measure(name: str, code: str, args: list[str], repeat: int, top: int) -> dict[str, Any]:
    runs = [json.loads(probe(code, args).stdout) for _ in range(repeat)]
    best = min(runs, key=lambda run: run["total_cpu_ms"])
    traced = probe(code, args, importtime=True)
    row = {"function": name, **{key: round(value, 1) for key, value in best.items()}}
    row["heaviest_imports"] = heaviest(traced.stderr, top)
    return row


def rows(repeat: int, top: int) -> list[dict[str, Any]]:
    result = [measure(f, FUNCTION_PROBE, [f, CONTROLLER.get(f, f)], repeat, top) for f in FUNCTIONS]
    result.append(measure("conversion", FUNCTION_PROBE, ["conversion", "-"], repeat, top))
    result.append(measure("pure core (reference)", MODULES_PROBE, list(PURE_CORE), repeat, top))
    result.append(measure("bare interpreter", MODULES_PROBE, [], repeat, top))
    return result


def print_table(table: list[dict[str, Any]]) -> None:
    header = (
        f"{'function':<23}{'import':>8}{'(CPU)':>8}{'build':>8}{'ctrl':>7}{'total':>8}{'(CPU)':>8}  heaviest imports"
    )
    print(header)
    print("-" * (len(header) + 40))
    for r in table:
        names = ", ".join(f"{n} {ms:.0f}" for n, ms in r["heaviest_imports"])
        print(
            f"{r['function']:<23}{r['import_ms']:>8.0f}{r['import_cpu_ms']:>8.0f}{r['build_ms']:>8.0f}"
            f"{r['controller_ms']:>7.0f}{r['total_ms']:>8.0f}{r['total_cpu_ms']:>8.0f}  {names}"
        )
    print(f"\nmilliseconds, best of the runs by CPU; load average {os.getloadavg()[0]:.1f} over the last minute")
    print("heaviest imports: a package's first import with what it imports in turn (-X importtime cumulative)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", action="store_true", help="one JSON object per function")
    parser.add_argument("--repeat", type=int, default=3, help="fresh interpreters per function (default 3)")
    parser.add_argument("--top", type=int, default=5, help="heaviest imports to name (default 5)")
    args = parser.parse_args()
    table = rows(args.repeat, args.top)
    if args.json:
        for row in table:
            print(json.dumps(row))
    else:
        print_table(table)


if __name__ == "__main__":
    main()
