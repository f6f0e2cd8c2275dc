"""When a batch of provisioning triggers needs no pass: the FIFO skip rule. Pure.

The provisioning queue is FIFO with one message group, so passes run one at a time, in batches of at most
ten messages. A burst of cluster events therefore arrives as many small batches in a row, and every pass
reconciles the whole cluster as it reads it. A batch whose triggers all happened before the start of the
last completed pass asks for nothing that pass has not already seen: it is acknowledged without a pass.

A trigger's time is when the forwarder observed the change (``detail.observedAt``, microseconds), or for
the one-minute sweep the scheduled time (the envelope's ``time``, whole seconds, so counted as the end of
its second). A margin covers the clocks of the forwarder's node and of Lambda disagreeing a little.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Protocol

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
