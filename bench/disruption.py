"""One disruption decision pass (``DisruptionController.assess()``) over a large in-memory cluster.

    .venv/bin/python bench/disruption.py [--nodes 500] [--pods 5000] [--repeat 3]

The cluster is built with the disruption tests' builders (``tests/unit/disruption/world.py``): two NodePools
(``general``, budget 10%; ``batch``, 20% with no Empty disruption in an always-open window), nodes of m5.large,
m5.xlarge and m5.2xlarge, one in 25 drifted (AMIDrift from the provider), one in 20 empty, the rest carrying
the pods at utilisations from 10% to 90%; a few PDBs that allow no disruption and a few do-not-disrupt pods.
The catalogue is the tests' four types plus c5, r5 and m5.4xlarge, so consolidation has cheaper options.

Two cases over the same nodes: ``mixed`` as described, where drift wins the pass (the methods stop at the first
command, as Karpenter's do), and ``consolidation``, where the Drifted and Empty budgets are 0 so the pass goes
on to multi- and single-node consolidation, the expensive methods. Per case: the median over ``--repeat`` timed
runs after one untimed warm-up of the whole ``assess()`` and of its phases (the cluster read, drift and
conditions, candidates, the rescheduler's index, each method from ``decisions.seconds``), the number of
simulations (scheduler solves), the command found, and the peak of Python allocations (a separate traced
run). Reference in the same run: the provisioner's scheduler placing the same pods from scratch
(``Scheduler(snapshot).solve(pods)``), one scheduling pass. Figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
import tracemalloc
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from autoscaler.cloudprovider.errors import CloudProviderError
from autoscaler.cloudprovider.types import Drift
from autoscaler.controllers.disruption import assessment as assessment_module
from autoscaler.controllers.disruption.candidates import Candidate
from autoscaler.controllers.disruption.rescheduling import Rescheduler, Rescheduling
from autoscaler.controllers.state import ClusterState
from autoscaler.scheduling import ClusterSnapshot, Scheduler
from tests.unit.controllers.provisioning_doubles import CATALOGUE, instance_type
from tests.unit.disruption.world import FakeCloud, World, node_and_claim, pod, pool

NODE_TYPES = (("m5.large", 2, 8), ("m5.xlarge", 4, 16), ("m5.2xlarge", 8, 32))  # (name, vCPU, GiB)
EXTRA_TYPES = (
    instance_type("c5.large", 2, 4, 0.085),
    instance_type("c5.xlarge", 4, 8, 0.17),
    instance_type("r5.large", 2, 16, 0.126),
    instance_type("r5.xlarge", 4, 32, 0.252),
    instance_type("m5.4xlarge", 16, 64, 0.768),
)
PDBS = 4  # apps whose PDB allows no disruption now
GUARDED_EVERY = 500  # one pod in this many belongs to one of those apps
DO_NOT_DISRUPT_EVERY = 400  # one pod in this many has karpenter.sh/do-not-disrupt


def pools(consolidation_only: bool) -> list[Any]:
    general: list[dict[str, Any]] = [{"nodes": "10%"}]
    batch: list[dict[str, Any]] = [
        {"nodes": "20%"},
        {"nodes": "0", "reasons": ["Empty"], "schedule": "@daily", "duration": "24h"},
    ]
    if consolidation_only:  # drift and emptiness find nothing within budget: the pass reaches consolidation
        closed = {"nodes": "0", "reasons": ["Drifted", "Empty"]}
        general, batch = [*general, closed], [*batch, closed]
    return [pool("general", disruption={"budgets": general}), pool("batch", disruption={"budgets": batch})]


def build(nodes: int, pods: int, consolidation_only: bool) -> tuple[World, list[dict[str, Any]]]:
    """The world, and the same pods unbound (the scheduling reference's input)."""
    general, batch = pools(consolidation_only)
    objects: list[Any] = [general, batch]
    drifts: dict[str, Drift | CloudProviderError] = {}
    carrying: list[tuple[str, int, int, float]] = []  # (node, vCPU, GiB, utilisation)
    for index in range(nodes):
        name = f"n{index:04d}"
        type_name, cpu, memory = NODE_TYPES[index % len(NODE_TYPES)]
        claim, node = node_and_claim(name, general if index % 2 else batch, type_name)
        objects += [claim, node]
        if index % 25 == 0:
            drifts[name] = Drift("AMIDrift", "ami-old not among resolved [ami-new] for alias al2023@latest")
        if index % 20 != 1:
            carrying.append((f"node-{name}", cpu, memory, 0.1 + 0.8 * ((index * 37) % 100) / 100))
    per_node: dict[str, int] = defaultdict(int)
    for number in range(pods):
        per_node[carrying[number % len(carrying)][0]] += 1
    bound, unbound = [], []
    for number in range(pods):
        node_name, cpu, memory, share = carrying[number % len(carrying)]
        count = per_node[node_name]
        millicpu, mebibytes = max(int(share * cpu * 900 / count), 10), max(int(share * memory * 900 / count), 16)
        guarded = number % GUARDED_EVERY == 3
        app = f"guarded-{number // GUARDED_EVERY % PDBS}" if guarded else f"app-{number % 50}"
        metadata: dict[str, Any] = {"labels": {"app": app}}
        if number % DO_NOT_DISRUPT_EVERY == 7:
            metadata["annotations"] = {"karpenter.sh/do-not-disrupt": "true"}
        args = (f"{millicpu}m", f"{mebibytes}Mi")
        bound.append(pod(f"p{number:05d}", node_name, *args, **metadata))
        unbound.append(pod(f"p{number:05d}", None, *args, **metadata))
    objects += bound
    objects += [
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": f"guarded-{k}", "namespace": "default"},
            "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": f"guarded-{k}"}}},
            "status": {"disruptionsAllowed": 0},
        }
        for k in range(PDBS)
    ]
    return World.of(*objects, cloud=FakeCloud(types=(*CATALOGUE, *EXTRA_TYPES), drifts=drifts)), unbound


class Phases:
    """Seconds per phase of ``assess()`` and the number of simulations, by wrapping the functions it calls."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.simulations = 0
        self.simulation_seconds = 0.0  # inside the methods' figures: the scheduler solves alone

    @contextmanager
    def installed(self) -> Iterator[None]:
        patches: list[tuple[Any, str, Any]] = [
            (ClusterState, "read", "read (in-memory copy)"),
            (assessment_module.Assessor, "_drift", "drift checks"),
            (assessment_module, "wanted_status", "conditions"),
            (assessment_module, "find_candidates", "candidates"),
            (assessment_module, "usable_nodepools", "instance types"),
            (Rescheduler, "__init__", "rescheduler index"),
        ]
        saved = [(owner, attribute, owner.__dict__[attribute]) for owner, attribute, _ in patches]
        for owner, attribute, label in patches:
            setattr(owner, attribute, self._timed(label, getattr(owner, attribute)))
        reschedule = Rescheduler.reschedule

        def counted(rescheduler: Rescheduler, candidates: Sequence[Candidate]) -> Rescheduling:
            self.simulations += 1
            started = time.perf_counter()
            try:
                return reschedule(rescheduler, candidates)
            finally:
                self.simulation_seconds += time.perf_counter() - started

        Rescheduler.reschedule = counted  # type: ignore[method-assign,assignment]
        try:
            yield
        finally:
            Rescheduler.reschedule = reschedule  # type: ignore[method-assign]
            for owner, attribute, original in saved:
                setattr(owner, attribute, original)

    def _timed(self, label: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self.seconds[label] += time.perf_counter() - started

        return timed


def measure(world: World, repeat: int) -> tuple[dict[str, float], int, Any, float]:
    """(median seconds by phase, simulations per pass, the assessment, peak MiB)."""
    controller = world.controller()
    controller.assess()  # warm-up, untimed
    runs: list[dict[str, float]] = []
    found: Any = None
    simulations = 0
    for _ in range(repeat):
        phases = Phases()
        gc.collect()
        with phases.installed():
            started = time.perf_counter()
            found = controller.assess()
            total = time.perf_counter() - started
        methods = {f"method: {k}": v for k, v in found.decisions.seconds.items()}
        rest = total - sum(phases.seconds.values()) - sum(methods.values())
        runs.append({"assess()": total, **phases.seconds, **methods, "rest (node lookups, budgets, copies)": rest})
        simulations = phases.simulations
    gc.collect()
    tracemalloc.start()
    controller.assess()
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return {key: statistics.median(r.get(key, 0.0) for r in runs) for key in runs[0]}, simulations, found, peak


def reference(world: World, pods: list[dict[str, Any]], repeat: int) -> tuple[float, int, int]:
    """Median seconds for the scheduler to place ``pods`` on an empty cluster, with its new NodeClaims."""
    nodepools = world.cluster.nodepools()
    types = {p.name: list(world.cloud.types) for p in nodepools}

    def solve() -> Any:
        return Scheduler(ClusterSnapshot(nodepools=nodepools, instance_types=types)).solve(pods)

    solve()
    times, result = [], None
    for _ in range(repeat):
        gc.collect()
        started = time.perf_counter()
        result = solve()
        times.append(time.perf_counter() - started)
    assert result is not None
    return statistics.median(times), len(result.new_nodeclaims), len(result.unschedulable)


def show(case: str, figures: dict[str, float], simulations: int, found: Any, peak: float) -> None:
    candidates = found.candidates
    print(
        f"{case}: {len(found.claims)} NodeClaims, {len(candidates.candidates)} candidates, "
        f"{len(candidates.ineligible)} ineligible, {len(found.decisions.blocked)} blocked; "
        f"eligible {dict(found.decisions.eligible)}"
    )
    width = max(len(k) for k in figures)
    for key, seconds in figures.items():
        print(f"  {key.ljust(width)}  {seconds:8.3f} s")
    command = found.decisions.command
    print(f"  simulations: {simulations}; peak Python allocations {peak:.0f} MiB")
    if command is None:
        print("  command: none")
        return
    savings = f", saving ${command.savings:.2f}/h" if command.savings is not None else ""
    kind = f" ({command.consolidation_type})" if command.consolidation_type else ""
    print(
        f"  command: {command.reason}{kind}: {command.decision} {len(command.candidates)} nodes with "
        f"{len(command.replacements)} replacements{savings}"
    )


def main(nodes: int, pods: int, repeat: int) -> None:
    print(f"{nodes} nodes, {pods} pods; median of {repeat} runs after a warm-up")
    unbound: list[dict[str, Any]] = []
    world: World | None = None
    for case, consolidation_only in (("mixed", False), ("consolidation", True)):
        world, unbound = build(nodes, pods, consolidation_only)
        show(case, *measure(world, repeat))
    assert world is not None
    seconds, claims, unschedulable = reference(world, unbound, repeat)
    print(
        f"reference: Scheduler(snapshot).solve() of the same {pods} pods from scratch: {seconds:.3f} s "
        f"({claims} new NodeClaims, {unschedulable} unschedulable)"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--pods", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    main(options.nodes, options.pods, options.repeat)
