"""The real Lambda handlers of one simulated deployment, invoked in this process through the Lambda harness
(``autoscaler_dev.harness``): fed SQS batches as an event source mapping hands them over (messages acknowledged
unless reported as batch item failures), or an EventBridge event directly, with the scenario's faults.

Their logs and EMF metrics go to ``log`` instead of stdout; :class:`MetricTally` adds the metrics up so a
simulation can report what the functions did in their own words (interruptions handled, NodeClaims disrupted).
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import IO, Any

import boto3
from aws_lambda_powertools.logging.utils import copy_config_to_registered_loggers

from autoscaler import routing, runtime
from autoscaler.controllers.disruption.verification import PlacementCheck, check_placements
from autoscaler.providers.aws.clients import AWSClients
from autoscaler.runtime import Runtime
from autoscaler.settings import Settings
from autoscaler_dev.harness import Context, InvocationDied, load_handler, sqs_record
from autoscaler_dev.world.faults import FaultRates, Faults
from autoscaler_dev.world.redelivery import HOLD_SECONDS, VirtualVisibility, release
from autoscaler_dev.world.stack import Queue


@dataclass(frozen=True)
class Invocation:
    function: str
    seconds: float
    result: Any = None
    error: str | None = None  # the exception that escaped the handler (Lambda would retry or dead-letter)


@dataclass
class MetricTally:
    """EMF metrics the handlers printed, summed by (name, dimension key=value ...)."""

    totals: dict[tuple[str, ...], float] = field(default_factory=dict)

    def read(self, text: str) -> None:
        for line in text.splitlines():
            if '"_aws"' not in line:
                continue
            try:
                record = json.loads(line)
            except ValueError:
                continue
            for directive in record.get("_aws", {}).get("CloudWatchMetrics", []):
                dimensions = sorted({d for group in directive.get("Dimensions", []) for d in group} - {"service"})
                for metric in directive.get("Metrics", []):
                    value = record.get(metric["Name"])
                    values = value if isinstance(value, list) else [value]
                    key = (metric["Name"], *(f"{d}={record.get(d)}" for d in dimensions))
                    self.totals[key] = self.totals.get(key, 0.0) + sum(v for v in values if isinstance(v, int | float))

    def total(self, name: str, **dimensions: str) -> float:
        wanted = {f"{k}={v}" for k, v in dimensions.items()}
        return sum(v for key, v in self.totals.items() if key[0] == name and wanted <= set(key[1:]))


class Containers:
    """One runtime per function, built on its first invocation and kept, as each function has warm containers of
    its own (a cache one fills is not another's), each on clients whose session ``session(function)`` gives: the
    AWS call gate's, so every call is made as that function."""

    def __init__(
        self,
        settings: Settings,
        clock: Callable[[], datetime],
        endpoint: str,
        session: Callable[[str], boto3.Session],
        placement_checks: tuple[PlacementCheck, ...] = (check_placements,),
        *,
        skew: Callable[[str], float] = lambda function: 0.0,
    ) -> None:
        self.settings, self.clock, self.endpoint, self.session = settings, clock, endpoint, session
        self.placement_checks = placement_checks
        self.skew = skew  # seconds a function's clock is off the world's (and the API server's)
        self._runtimes: dict[str, Runtime] = {}

    def __call__(self, function: str) -> Runtime:
        if function not in self._runtimes:
            clients = AWSClients(self.settings.region, endpoint_url=self.endpoint, session=self.session(function))
            off, world = timedelta(seconds=self.skew(function)), self.clock
            clock = (lambda: world() + off) if off else world
            self._runtimes[function] = Runtime.build(
                self.settings, clock=clock, clients=clients, placement_checks=self.placement_checks
            )
        return self._runtimes[function]


class Functions:
    """The handlers of one simulated deployment; ``log`` receives their output. With ``containers``, each
    invocation runs on its function's runtime; without, on whatever runtime is installed."""

    def __init__(
        self,
        log: IO[str] | None = None,
        directory: Path | None = None,
        faults: Faults | None = None,
        containers: Callable[[str], Runtime] | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.containers = containers
        self.clock = clock  # virtual seconds: each invocation's span is recorded on it
        self.spans: dict[str, list[tuple[float, float]]] = {}  # function -> (start, end) of each invocation
        self.faults = faults or Faults(FaultRates())
        self.readers: list[Callable[[str, str], None]] = []  # each gets (function, text) of what its logs write
        self.log = _LogTee(log if log is not None else open(os.devnull, "w"), self.readers)  # noqa: SIM115
        with contextlib.redirect_stdout(self.log):  # Powertools' loggers write to the stdout they were made with
            self.modules = {name: load_handler(name, directory) for name in routing.FUNCTIONS}
        _point_powertools_loggers_at(self.log)
        self.metrics = MetricTally()
        self.invocations: Counter[str] = Counter()
        self.seconds: dict[str, float] = {}  # wall time spent in each function
        self.errors: list[Invocation] = []  # invocations that raised out of the handler (not injected deaths)
        self.outage_errors: list[Invocation] = []  # those that raised while the Kubernetes API was down: expected
        self.deaths: Counter[str] = Counter()  # invocations the faults cut short
        self.visibility = VirtualVisibility()  # what the deliveries left unacknowledged, until it is due again

    def invoke(self, name: str, event: Mapping[str, Any], *, overlapping: bool = False) -> Invocation:
        """One invocation with ``event``; an exception escaping the handler is recorded, not raised.
        ``overlapping``: a second invocation is handed the same event while the first works (an SQS batch whose
        visibility timeout expired mid-way); the first's answer is returned, both are counted."""
        self.log.function = name
        _label_core_logs(self.modules[name])
        buffer = io.StringIO()
        started = time.perf_counter()
        began = self.clock() if self.clock is not None else 0.0
        outage = self.faults.kube.down
        if self.containers is not None:
            runtime.install(self.containers(name))  # one runtime for both: the world has one container a function
        calls = [_Call(self.modules[name].handler, event, Context.of(name)) for _ in range(2 if overlapping else 1)]
        with contextlib.redirect_stdout(buffer), self.faults.invocation():
            threads = [threading.Thread(target=call.run, name=f"{name}-overlap") for call in calls[1:]]
            for thread in threads:
                thread.start()
            calls[0].run()
            for thread in threads:
                thread.join()
        if self.clock is not None:
            self.spans.setdefault(name, []).append((began, self.clock()))
        output = buffer.getvalue()
        self.metrics.read(output)
        self.log.write(output)
        invocations = [self._record(name, call, time.perf_counter() - started, outage) for call in calls]
        return invocations[0]

    def _record(self, name: str, call: _Call, seconds: float, outage: bool) -> Invocation:
        self.invocations[name] += 1
        if call.died:
            self.deaths[name] += 1
        invocation = Invocation(name, seconds, call.result, call.error)
        self.seconds[name] = self.seconds.get(name, 0.0) + invocation.seconds
        if call.error and not call.died:
            (self.outage_errors if outage or self.faults.kube.down else self.errors).append(invocation)
        return invocation

    def drain(
        self, name: str, queue: Queue, sqs: Any, *, batch_size: int = 10, max_batches: int = 50
    ) -> list[Invocation]:
        """Deliver ``queue`` to function ``name`` batch by batch until nothing is visible (or ``max_batches``): the
        event source mapping's part. Messages the handler did not report as failures are deleted; the rest (all of
        a batch whose invocation failed) come back after the queue's visibility timeout, in virtual time."""
        invocations = []
        clock = self.clock
        held_on = clock if queue.redelivery.visibility_seconds > 0 else None  # the clock its holds are kept on
        for _ in range(max_batches):
            if clock is not None:
                self.visibility.release_due(sqs, clock())
            received = sqs.receive_message(
                QueueUrl=queue.url,
                MaxNumberOfMessages=batch_size,
                VisibilityTimeout=HOLD_SECONDS if held_on is not None else 0,
                AttributeNames=["All"],
                MessageAttributeNames=["All"],
            ).get("Messages", [])
            if not received:
                break
            received = self.faults.reordered(received, fifo=queue.url.endswith(".fifo"))
            event = {"Records": [sqs_record(m, queue.arn) for m in received]}
            invocation = self.invoke(name, event, overlapping=self.faults.visibility_expired())
            invocations.append(invocation)
            failed = _failed_ids(invocation)
            acknowledged = [] if "*" in failed else [m for m in received if m["MessageId"] not in failed]
            # At least once: an acknowledged message delivered again. Such a duplicate is a stale copy whose receive
            # count does not grow past the one it was handled at, but moto redelivers the message itself, counting
            # on; so only a message with a receive to spare is duplicated, else SQS would move a handled message
            # to the dead-letter queue (without the reason the function gives what it dead-letters).
            spare = [m for m in acknowledged if _receives(m) < queue.redelivery.max_receives]
            again = {m["MessageId"] for m in spare if self.faults.duplicate()}
            done = [m for m in acknowledged if m["MessageId"] not in again]
            for start in range(0, len(done), 10):
                entries = [
                    {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(done[start : start + 10])
                ]
                sqs.delete_message_batch(QueueUrl=queue.url, Entries=entries)
            if held_on is not None:
                release(sqs, queue.url, [m["ReceiptHandle"] for m in acknowledged if m["MessageId"] in again])
                answered = {m["MessageId"] for m in acknowledged}
                unacknowledged = [m for m in received if m["MessageId"] not in answered]
                self.visibility.hold(queue.url, unacknowledged, held_on() + queue.redelivery.visibility_seconds)
            if failed:
                break  # redelivered after the visibility timeout; after maxReceiveCount SQS moves them to the DLQ
        return invocations

    def events_from(self, queue: Queue, sqs: Any) -> list[dict[str, Any]]:
        """EventBridge events a rule put on an inbox queue (standing in for a Lambda target), removed from it."""
        found: list[dict[str, Any]] = []
        while True:
            received = sqs.receive_message(QueueUrl=queue.url, MaxNumberOfMessages=10).get("Messages", [])
            if not received:
                return found
            for message in received:
                found.append(json.loads(message["Body"]))
                sqs.delete_message(QueueUrl=queue.url, ReceiptHandle=message["ReceiptHandle"])


def _receives(message: Mapping[str, Any]) -> int:
    return int((message.get("Attributes") or {}).get("ApproximateReceiveCount", 1))


class _Call:
    """One handler call: its answer, or what it raised (an injected death apart)."""

    def __init__(self, handler: Callable[..., Any], event: Mapping[str, Any], context: Context) -> None:
        self.handler, self.event, self.context = handler, event, context
        self.result: Any = None
        self.error: str | None = None
        self.died = False

    def run(self) -> None:
        try:
            self.result = self.handler(dict(self.event), self.context)
        except InvocationDied as died:  # Lambda's retries and the next sweep are what recovers
            self.error, self.died = f"died: {died}", True
        except Exception as failure:  # Lambda reports it; the simulation counts it and goes on
            self.error = f"{type(failure).__name__}: {failure}"


class _LogTee(io.TextIOBase):
    """The stream the handlers' logs go to: written through to the run's log, and handed to each reader with the
    name of the function being invoked (a logging handler writes a record in one call)."""

    def __init__(self, log: IO[str], readers: list[Callable[[str, str], None]]) -> None:
        self.target, self.readers, self.function = log, readers, ""

    def write(self, text: str) -> int:
        self.target.write(text)
        for reader in self.readers:
            reader(self.function, text)
        return len(text)

    def flush(self) -> None:
        self.target.flush()


def _label_core_logs(module: Any) -> None:
    """The core's loggers write with the handler of the function invoked: in Lambda a process runs one function,
    here every function shares them and the last one built would label every line with its service."""
    tools = getattr(module, "tools", None)
    if tools is not None:
        copy_config_to_registered_loggers(source_logger=tools.logger, include={"autoscaler"})


def _point_powertools_loggers_at(stream: IO[str] | io.TextIOBase) -> None:
    """A logger made for an earlier run in this process keeps the stream it was made with (Powertools adds no second
    handler to a logger that has one): point every Powertools handler at this run's log."""
    from aws_lambda_powertools.logging.formatter import LambdaPowertoolsFormatter

    loggers = [
        logging.getLogger(),
        *(lg for lg in logging.Logger.manager.loggerDict.values() if isinstance(lg, logging.Logger)),
    ]
    for logger in loggers:
        for handler in logger.handlers:
            if isinstance(handler, logging.StreamHandler) and isinstance(handler.formatter, LambdaPowertoolsFormatter):
                with handler.lock or contextlib.nullcontext():  # not setStream: it flushes the old, maybe closed, one
                    handler.stream = stream


def _failed_ids(invocation: Invocation) -> set[str]:
    if invocation.error is not None:
        return {"*"}  # the whole batch failed: nothing is acknowledged
    result = invocation.result if isinstance(invocation.result, Mapping) else {}
    return {str(f.get("itemIdentifier")) for f in result.get("batchItemFailures") or ()}
