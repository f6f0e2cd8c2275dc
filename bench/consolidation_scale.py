"""A full disruption pass (``DisruptionController.run()``) over 1,000 nodes and 10,000 pods, next to 100 / 1,000.

    .venv/bin/python bench/consolidation_scale.py [--sizes 100:1000,1000:10000] [--json]

The cluster is ``bench/disruption.py``'s (two NodePools with budgets; drifted, empty and underutilized nodes,
PDBs, do-not-disrupt pods) in the in-memory Kubernetes double, and the pass is the function's own: read the
cluster, drift and conditions, candidates, the methods, the condition writes, the revalidation and the start of
the command (its replacements created, or its nodes deleted). Three cases per size, each on a fresh cluster
so that every pass starts from the same state:

- ``drift``: the mix as built; drift finds its command first (each drifted node simulated with those before it);
- ``multi``: the Drifted and Empty budgets closed, so drift and emptiness find nothing within budget and
  multi-node consolidation (a binary search over up to 100 candidates) finds the command;
- ``single``: as ``multi`` with multi-node consolidation given one candidate at most (it then proposes
  nothing), so single-node consolidation walks the candidates, cheapest to evict first.

Figures per case: the pass's wall time, the methods' seconds, the number of simulations (scheduler solves of a
rescheduling) and the median time per simulation, the command found. The smaller size is the reference measured
in the same run. Karpenter users report about 900 ms per node for a consolidation pass (18 minutes at 1,000
nodes, issue 25). Figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from autoscaler.controllers.disruption import methods
from bench.disruption import Phases, build

CASES = (("drift", False, None), ("multi", True, None), ("single", True, 1))


def one(nodes: int, pods: int, closed: bool, multi_cap: int | None) -> dict[str, Any]:
    world, _ = build(nodes, pods, closed)
    controller = world.controller()
    saved = methods.MULTI_NODE_MAX_CANDIDATES
    if multi_cap is not None:
        methods.MULTI_NODE_MAX_CANDIDATES = multi_cap
    phases = Phases()
    gc.collect()
    try:
        with phases.installed():
            started = time.perf_counter()
            result = controller.run()
            wall = time.perf_counter() - started
    finally:
        methods.MULTI_NODE_MAX_CANDIDATES = saved
    assert result is not None
    decisions = result.assessment.decisions
    command = decisions.command
    return {
        "nodes": nodes,
        "pods": pods,
        "wall_s": round(wall, 3),
        "read_s": round(phases.seconds["read (in-memory copy)"], 3),
        "methods_s": {k: round(v, 3) for k, v in decisions.seconds.items()},
        "simulations": phases.simulations,
        "seconds_per_simulation": round(phases.simulation_seconds / max(phases.simulations, 1), 4),
        "command": None if command is None else f"{command.reason} {command.consolidation_type or ''}".strip(),
        "command_nodes": 0 if command is None else len(command.candidates),
        "replacements": 0 if command is None else len(command.replacements),
        "writes": len(world.cluster.writes),
    }


def main(sizes: list[tuple[int, int]], as_json: bool) -> None:
    for nodes, pods in sizes:
        for case, closed, cap in CASES:
            row = {"case": f"{case}-{nodes}", **one(nodes, pods, closed, cap)}
            if as_json:
                print(json.dumps(row))
                continue
            shown = ", ".join(f"{k} {v:.2f} s" for k, v in row["methods_s"].items())
            print(
                f"{row['case']:>12}: {nodes} nodes / {pods} pods: pass {row['wall_s']:.2f} s (read "
                f"{row['read_s']:.2f} s; {shown}); {row['simulations']} simulations, "
                f"{row['seconds_per_simulation'] * 1000:.0f} ms each; command {row['command']} of "
                f"{row['command_nodes']} nodes, {row['replacements']} replacements; {row['writes']} writes"
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sizes", default="100:1000,1000:10000", help="nodes:pods,...")
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    parsed = [tuple(int(x) for x in size.split(":")) for size in options.sizes.split(",")]
    main([(n, p) for n, p in parsed], options.json)
