"""Interruption throughput: Karpenter's interruption benchmark mix through the real handler, against the
Kubernetes API emulator over HTTP.

The mix is Karpenter's (``interruption_benchmark_test.go``): a third AWS Health scheduled changes, a third
spot interruption warnings, the rest instance state changes (stopping, stopped, shutting-down, terminated),
each for a node (and its NodeClaim) that exists. The messages reach the handler as Lambda's SQS event
source delivers them, in batches of 10 (Karpenter's receive size) or 100 (a Lambda batch with a batching
window), one invocation after another: the figures are per invocation (per concurrent Lambda).

The emulator runs in its own process, as an API server would, so the handler has a core of its own; its
CPU time is measured to show when it, not the handler, is the bottleneck. Per size and batch size:

- messages/s: messages handled per second of handler wall time;
- API requests per message: every request the emulator served during the run (reads, writes) / messages;
- p50 / p99 message -> cordon: from the moment a batch is delivered (its SentTimestamp) to each node's cordon;
- acted, errors: messages acted on, and messages failed (or lost to an exception);
- handler µs, emulator µs: CPU time of each process per message (steadier than msg/s on a shared machine),
  and the 1-minute load average when the row ended.

The reference, in the same run: the same handler over the unit tests' in-memory Cluster (no HTTP), which
is what the handler costs by itself (``--json`` prints it too, as ``"cluster": "in-memory"``).

    .venv/bin/python bench/interruption.py [--sizes 100 1000 5000 15000] [--batches 10 100] [--json]
        [--fresh-index]      rebuild the cluster index for every batch (the reference without warm reuse)
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import multiprocessing
import os
import random
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "Bench")
os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")

from autoscaler import runtime  # noqa: E402
from autoscaler.apis.v1 import labels as wk  # noqa: E402
from autoscaler.cloudprovider.unavailable import InMemoryUnavailableOfferings  # noqa: E402
from autoscaler.controllers.interruption import (  # noqa: E402
    FRESH_PER_BATCH,
    BatchReport,
    InterruptionController,
    QueuedMessage,
    Status,
)
from autoscaler.kube.client import KubernetesCluster  # noqa: E402
from autoscaler.kube.connect import plain_client  # noqa: E402
from autoscaler.kube.rest import KubeRest  # noqa: E402
from autoscaler_dev.harness import Context, load_handler  # noqa: E402
from autoscaler_dev.world import interruptions as sample  # noqa: E402
from tests.support.memory_runtime import memory_runtime  # noqa: E402

STATES = ("stopping", "stopped", "shutting-down", "terminated")
ZONES = ("us-west-2a", "us-west-2b", "us-west-2c")
TYPES = ("m5.large", "c5.xlarge", "r5.2xlarge")
CONTEXT = Context("interruption", timeout_seconds=20, memory_limit_in_mb=1769)  # one full vCPU


@dataclass
class Row:
    messages: int
    batch: int
    messages_per_sec: float
    api_requests_per_message: float
    reads_per_message: float
    writes_per_message: float
    p50_ms: float
    p99_ms: float
    acted: int
    errors: int
    handler_cpu: float  # share of the wall time the handler's process was on a CPU
    emulator_cpu: float  # same for the emulator's process
    cluster: str = "emulator"  # or "in-memory": the reference
    load: float = 0.0  # the machine's 1-minute load average at the end of the row

    @property
    def handler_us_per_message(self) -> float:
        """CPU time of the handler's process per message: steadier than msg/s on a shared machine."""
        return self.handler_cpu / self.messages_per_sec * 1e6

    @property
    def emulator_us_per_message(self) -> float:
        return self.emulator_cpu / self.messages_per_sec * 1e6

    def line(self) -> str:
        return (
            f"{self.messages:>8} {self.batch:>5} {self.messages_per_sec:>8.0f} {self.api_requests_per_message:>8.2f}"
            f" {self.reads_per_message:>6.3f} {self.writes_per_message:>6.2f} {self.p50_ms:>7.1f} {self.p99_ms:>7.1f}"
            f" {self.acted:>6} {self.errors:>6} {self.handler_us_per_message:>10.0f}"
            f" {self.emulator_us_per_message:>11.0f} {self.load:>5.1f}"
        )

    def json(self) -> str:
        keys = ("messages", "batch", "messages_per_sec", "api_requests_per_message", "p50_ms", "p99_ms")
        keys += ("handler_us_per_message", "emulator_us_per_message", "load")
        figures = {k: round(getattr(self, k), 3) for k in keys}
        return json.dumps({"cluster": self.cluster} | figures | {"acted": self.acted, "errors": self.errors})


# --- the cluster: the emulator in a child process, seeded without HTTP ------------------------------
def objects_for(index: int, instance_id: str) -> list[dict[str, Any]]:
    zone, instance_type, name = ZONES[index % 3], TYPES[index % 3], f"claim-{index}"
    provider_id = sample.provider_id(instance_id, zone)
    labels = {wk.LABEL_NODEPOOL: "default", wk.LABEL_ZONE: zone, wk.LABEL_INSTANCE_TYPE: instance_type}
    nodeclaim = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {
            "name": name,
            "labels": {**labels, wk.LABEL_CAPACITY_TYPE: "spot"},
            "finalizers": [wk.FINALIZER_TERMINATION],
        },
        "spec": {
            "requirements": [{"key": wk.LABEL_CAPACITY_TYPE, "operator": "In", "values": ["spot"]}],
            "nodeClassRef": {"group": wk.AWS_GROUP, "kind": "EC2NodeClass", "name": "default"},
        },
        "status": {"providerID": provider_id, "nodeName": f"node-{index}"},
    }
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": f"node-{index}", "labels": {**labels, wk.LABEL_HOSTNAME: f"node-{index}"}},
        "spec": {"providerID": provider_id},
    }
    return [nodeclaim, node]


def serve_emulator(connection: Connection, instance_ids: Sequence[str]) -> None:
    from autoscaler_dev.kube_emulator.emulator import KubeEmulator

    with KubeEmulator(validate=False) as kube:  # objects are ours and valid: skip admission while seeding
        for index, instance_id in enumerate(instance_ids):
            for obj in objects_for(index, instance_id):
                kube.create(obj)
        connection.send(kube.url)
        while (command := connection.recv()) != "stop":
            if command == "requests":
                connection.send(kube.requests)
            elif command == "cpu":
                connection.send(time.process_time())


class EmulatorWorld:
    """The emulator in a child process, and the Cluster adapter over HTTP to it."""

    def __init__(self, instance_ids: Sequence[str]) -> None:
        self._connection, child = multiprocessing.Pipe()
        self._process = multiprocessing.Process(target=serve_emulator, args=(child, list(instance_ids)), daemon=True)
        self._process.start()
        self.url: str = self._connection.recv()
        self.cluster: Any = KubernetesCluster(KubeRest(plain_client(self.url)))

    def _ask(self, command: str) -> Any:
        self._connection.send(command)
        return self._connection.recv()

    def requests(self) -> dict[str, int]:
        return dict(self._ask("requests"))

    def cpu(self) -> float:
        return float(self._ask("cpu"))

    def stop(self) -> None:
        self._connection.send("stop")
        self._process.join(timeout=10)


class MemoryWorld:
    """The reference: the same objects in the unit tests' in-memory Cluster, no HTTP at all."""

    def __init__(self, instance_ids: Sequence[str]) -> None:
        from tests.support.memory_cluster import MemoryCluster

        self.cluster = MemoryCluster()
        for index, instance_id in enumerate(instance_ids):
            nodeclaim, node = objects_for(index, instance_id)
            node["metadata"] |= {"uid": f"uid-node-{index}"}
            self.cluster.add(nodeclaim, node)

    def requests(self) -> dict[str, int]:
        verbs = {"nodeclaims": "GET", "nodes": "GET", "nodepools": "GET"}
        return {f"{verbs.get(method, 'WRITE')} {method}": n for method, n in self.cluster.calls.items()}

    def cpu(self) -> float:
        return 0.0

    def stop(self) -> None:
        pass


# --- the messages -----------------------------------------------------------------------------------
def karpenter_mix(count: int, rng: random.Random) -> tuple[list[str], list[dict[str, Any]]]:
    """Instance ids and one EventBridge event for each, in Karpenter's proportions, shuffled."""
    instance_ids = [f"i-{rng.getrandbits(68):017x}" for _ in range(count)]
    third = count // 3
    events = [sample.scheduled_change([i]) for i in instance_ids[:third]]
    events += [sample.spot_interruption_warning(i) for i in instance_ids[third : 2 * third]]
    events += [sample.state_change(i, rng.choice(STATES)) for i in instance_ids[2 * third :]]
    rng.shuffle(events)
    return instance_ids, events


class MeasuredController(InterruptionController):
    """Keeps each batch's report, for the per-message cordon times; the handling itself is unchanged."""

    reports: list[BatchReport]

    def handle(self, batch: Sequence[QueuedMessage]) -> BatchReport:
        report = super().handle(batch)
        self.reports.append(report)
        return report


def run(count: int, batch: int, *, fresh_index: bool, in_memory: bool = False, seed: int = 7) -> Row:
    instance_ids, events = karpenter_mix(count, random.Random(seed))
    world = MemoryWorld(instance_ids) if in_memory else EmulatorWorld(instance_ids)
    try:
        handler = load_handler("interruption")
        controller = MeasuredController(
            world.cluster, InMemoryUnavailableOfferings(), None, index_policy=FRESH_PER_BATCH if fresh_index else None
        )
        controller.reports = []
        container = memory_runtime(world.cluster)
        container.controllers.interruption = controller  # in place of the one the registry would build
        runtime.install(container)
        bodies = [json.dumps(e) for e in events]
        before, emulator_cpu, handler_cpu = world.requests(), world.cpu(), time.process_time()
        failures, wall, emf = 0, 0.0, io.StringIO()
        for start in range(0, count, batch):
            delivered = datetime.now(UTC)
            records = [
                sample.sqs_record(body, message_id=f"m{start + n}", sent_at=delivered)
                for n, body in enumerate(bodies[start : start + batch])
            ]
            began = time.perf_counter()
            try:
                with contextlib.redirect_stdout(emf):  # the metrics the handler prints (EMF), not ours
                    response = handler.handler({"Records": records}, CONTEXT)
                failures += len(response["batchItemFailures"])
            except Exception as error:  # the whole batch failed
                print(f"batch at {start} failed: {error!r}", file=sys.stderr)
                failures += len(records)
            wall += time.perf_counter() - began
        handler_cpu = time.process_time() - handler_cpu
        emulator_cpu = world.cpu() - emulator_cpu
        after = world.requests()
    finally:
        world.stop()
    served = {k: after.get(k, 0) - before.get(k, 0) for k in after}
    reads = sum(v for k, v in served.items() if k.startswith("GET"))
    writes = sum(served.values()) - reads
    outcomes = [o for report in controller.reports for o in report.outcomes]
    latencies = sorted(
        (o.acted_at - o.sent_at).total_seconds() * 1000 for o in outcomes if o.acted_at and o.sent_at
    )  # SentTimestamp has millisecond precision
    acted = sum(1 for o in outcomes if o.status is Status.ACTED)
    errors = max(failures, sum(1 for o in outcomes if o.status is Status.FAILED))
    quantiles = statistics.quantiles(latencies, n=100, method="inclusive") if len(latencies) > 1 else [0.0] * 99
    return Row(
        count,
        batch,
        count / wall,
        (reads + writes) / count,
        reads / count,
        writes / count,
        quantiles[49],
        quantiles[98],
        acted,
        errors,
        handler_cpu / wall,
        emulator_cpu / wall,
        "in-memory" if in_memory else "emulator",
        os.getloadavg()[0],
    )


HEADER = (
    f"{'messages':>8} {'batch':>5} {'msg/s':>8} {'req/msg':>8} {'reads':>6} {'writes':>6}"
    f" {'p50 ms':>7} {'p99 ms':>7} {'acted':>6} {'errors':>6} {'handler µs':>10} {'emulator µs':>11} {'load':>5}"
)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 5000, 15000])
    parser.add_argument("--batches", type=int, nargs="+", default=[10, 100])
    parser.add_argument("--json", action="store_true", help="one JSON object per size and batch size per line")
    parser.add_argument("--fresh-index", action="store_true", help="rebuild the cluster index for every batch")
    args = parser.parse_args(argv)
    if not args.json:
        index = "rebuilt for every batch" if args.fresh_index else "built once and reused (IndexPolicy)"
        load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
        print(f"Karpenter's interruption mix, real handler; cluster index {index}")
        print(f"load average {load} on {os.cpu_count()} CPUs (the figures are CPU-bound: read them against it)")
        print("handler µs, emulator µs: CPU time of each process per message; load: 1-minute load average after")
        print(f"emulator (own process, HTTP):\n{HEADER}")
    for size in args.sizes:
        for batch in args.batches:
            row = run(size, batch, fresh_index=args.fresh_index)
            print(row.json() if args.json else row.line(), flush=True)
    if not args.json:
        print(f"reference: the same handler over an in-memory Cluster (no HTTP):\n{HEADER}")
    for batch in args.batches:
        row = run(max(args.sizes), batch, fresh_index=args.fresh_index, in_memory=True)
        print(row.json() if args.json else row.line(), flush=True)


if __name__ == "__main__":
    main()
