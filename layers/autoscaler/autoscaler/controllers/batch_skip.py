"""When a batch of provisioning triggers needs no pass: the FIFO skip rule. Pure.

The provisioning queue is FIFO with one message group, so passes run one at a time, in batches of at most
ten messages. A burst of cluster events therefore arrives as many small batches in a row, and every pass
reconciles the whole cluster as it reads it. A batch whose triggers all happened before the start of the
last completed pass asks for nothing that pass has not already seen: it is acknowledged without a pass.

A trigger's time is when the forwarder observed the change (``detail.observedAt``, microseconds), or for
the one-minute sweep the scheduled time (the envelope's ``time``, whole seconds, so counted as the end of
its second). A margin covers the clocks of the forwarder's node and of Lambda disagreeing a little.

:class:`QueuedPasses` applies the rule to a batch: it reads the last pass, skips or runs the pass, and records
it. A pass that fails is logged and counted, not raised: the next sweep, at most a minute away, passes again,
whereas a failed batch would block the FIFO message group for the whole visibility timeout.

The FIFO group keeps passes apart but for one case: a batch whose visibility timeout runs out while its pass
is still at work (Lambda's event source mapping can receive a batch well before it invokes the function) is
delivered again, and both passes would schedule the same pending pods onto twice the NodeClaims. So a pass
holds the provisioner lease, for as long as its invocation can live; a batch that finds it held by another
invocation is that same batch (nothing else of the group is delivered meanwhile) and is acknowledged without a
pass, and the one-minute sweep passes again if the holder dies. When the lease cannot be read or written (the
state table failing after the SDK's retries) the pass runs anyway: a node too many, which emptiness
consolidation takes back, costs less than provisioning stopping with the table.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from autoscaler.cloudprovider.errors import CloudProviderError
from autoscaler.cloudprovider.lease import Leases, holding
from autoscaler.metrics import PROVISIONER_FAILED_PASSES, PROVISIONER_SKIPPED_BATCHES, PROVISIONER_TRIGGERS, MetricPoint
from autoscaler.settings import PROVISIONER_LEASE, PROVISIONER_LEASE_MAX_SECONDS

log = logging.getLogger(__name__)
CLOCK_SKEW = timedelta(seconds=2)
WHOLE_SECOND = timedelta(seconds=1)


class LastPassStore(Protocol):
    """Where the start of the last completed pass is kept (the state table in Lambda)."""

    def started_at(self) -> datetime | None:
        """The start of the last completed pass, or None when no pass has been recorded (or it expired)."""
        ...

    def record(self, started_at: datetime) -> None:
        """Record a completed pass that started at ``started_at``; an older value never replaces a newer one."""
        ...


class InMemoryLastPass:
    def __init__(self) -> None:
        self._started: datetime | None = None

    def started_at(self) -> datetime | None:
        return self._started

    def record(self, started_at: datetime) -> None:
        if self._started is None or started_at > self._started:
            self._started = started_at


def already_handled(
    trigger_times: Iterable[datetime], last_pass_started: datetime | None, margin: timedelta = CLOCK_SKEW
) -> bool:
    """True when there is at least one trigger and every one predates the last completed pass's start by
    more than ``margin``."""
    times = list(trigger_times)
    if last_pass_started is None or not times:
        return False
    return all(t < last_pass_started - margin for t in times)  # not t + margin: a year-9999 time would overflow


def trigger_time(envelope_time: datetime, observed_at: datetime | None = None) -> datetime:
    """When a trigger happened: the forwarder's observation time when there is one, else the end of the
    second the event's envelope names (EventBridge's ``time`` has whole seconds)."""
    if observed_at is not None:
        return observed_at
    try:
        return envelope_time + WHOLE_SECOND
    except OverflowError:  # the end of time: the envelope's own second is as late as it gets
        return envelope_time


class TriggerEvent(Protocol):
    """An event that asks for a pass (``autoscaler.events``: a cluster event or the sweep)."""

    @property
    def id(self) -> str: ...

    @property
    def time(self) -> datetime: ...

    @property
    def observed_at(self) -> datetime | None: ...


@dataclass(frozen=True)
class Trigger:
    time: datetime  # see trigger_time
    event_id: str

    @classmethod
    def of(cls, event: TriggerEvent) -> Trigger:
        return cls(trigger_time(event.time, event.observed_at), event.id)


class CompletedPass(Protocol):
    @property
    def started_at(self) -> datetime: ...

    def summary(self) -> dict[str, Any]: ...

    def metric_points(self) -> list[MetricPoint]: ...


class Pass(Protocol):
    def run(self, time_left: Callable[[], float] = ..., since: datetime | None = None) -> CompletedPass:
        """One whole-cluster pass; ``since`` is when the previous completed pass started."""
        ...


@dataclass(frozen=True)
class BatchOutcome:
    summary: dict[str, Any]  # the pass's summary, or why there was none
    points: list[MetricPoint]


def _forever() -> float:
    return math.inf


def _skipped(reason: str, counted: MetricPoint) -> BatchOutcome:
    """A batch acknowledged without a pass, counted with the skipped batches."""
    return BatchOutcome({"skipped": reason}, [counted, MetricPoint(PROVISIONER_SKIPPED_BATCHES, 1)])


def lease_ttl(time_left: float) -> timedelta:
    """How long a pass holds the provisioner lease: as long as its invocation can still run, and the clocks'
    margin (a direct invocation, with no timeout, is held for the longest a Lambda function can run)."""
    return timedelta(seconds=min(time_left, PROVISIONER_LEASE_MAX_SECONDS)) + CLOCK_SKEW


class QueuedPasses:
    def __init__(self, reconciler: Pass, last_pass: LastPassStore, leases: Leases) -> None:
        self._reconciler, self._last_pass, self._leases = reconciler, last_pass, leases

    def run(self, triggers: Sequence[Trigger], holder: str, time_left: Callable[[], float] = _forever) -> BatchOutcome:
        """One pass for a batch of ``triggers`` by invocation ``holder``, unless there are none, the last
        completed pass saw them all, or another invocation's pass is running."""
        counted = MetricPoint(PROVISIONER_TRIGGERS, len(triggers))
        if not triggers:
            return BatchOutcome({"skipped": "not a provisioning trigger"}, [counted])
        try:
            last = self._last_pass.started_at()
        except CloudProviderError as error:  # skipping is only a saving: pass anyway
            log.warning("the last pass is unknown; passing anyway: %s", error)
            last = None
        if already_handled((t.time for t in triggers), last):
            log.info("batch of %d triggers already handled by the last pass (started %s)", len(triggers), last)
            return _skipped("every event predates the last completed pass", counted)
        ttl = lease_ttl(time_left())
        with holding(self._leases, PROVISIONER_LEASE, holder, ttl, pass_if_unknown=True) as held:
            if not held:
                text = "batch of %d triggers handed over again while its pass is still running; no second pass"
                log.info(text, len(triggers))
                return _skipped("another invocation's pass is running", counted)
            try:
                result = self._reconciler.run(time_left, since=last)
            except Exception:
                triggered = [t.event_id for t in triggers]
                log.exception("the pass failed; the next sweep passes again (triggers %s)", triggered)
                return BatchOutcome({"failed": True}, [counted, MetricPoint(PROVISIONER_FAILED_PASSES, 1)])
        try:
            self._last_pass.record(result.started_at)
        except CloudProviderError as error:
            log.warning("could not record the pass: %s", error)
        return BatchOutcome(result.summary(), [counted, *result.metric_points()])
