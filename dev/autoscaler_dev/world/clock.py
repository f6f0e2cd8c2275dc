"""Time in the embedded world: the virtual clock the functions read, and the pacer that holds it to a speed when a
person watches a run."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta

from autoscaler.clock import utc_now


class VirtualClock:
    """Time as the functions see it: it starts now, flows at real speed while anything runs (a pass takes the time
    it takes, which the provisioner's skip rule relies on) and jumps ahead between steps."""

    def __init__(self, start: datetime | None = None, timer: Callable[[], float] = time.perf_counter) -> None:
        self.start = (start or utc_now()).replace(microsecond=0)
        self._timer = timer
        self._base, self._anchor = 0.0, timer()

    @property
    def elapsed(self) -> float:
        """Virtual seconds since the start."""
        return self._base + self._timer() - self._anchor

    def jump(self, to: float) -> None:
        """Move ahead to ``to`` seconds since the start (never back: real time spent meanwhile counts)."""
        self._base, self._anchor = max(to, self.elapsed), self._timer()

    def __call__(self) -> datetime:
        return self.start + timedelta(seconds=self.elapsed)


class Pacer:
    """Holds virtual time to at most ``speed`` virtual seconds per wall second (no limit when None); a wait ends
    early when ``stop`` is set, so that SIGTERM ends a served world at once."""

    def __init__(self, speed: float | None, clock: VirtualClock, stop: threading.Event) -> None:
        self.speed, self.clock, self.stop = speed, clock, stop
        self.started, self.virtual_start = time.perf_counter(), clock.elapsed

    def wait(self) -> None:
        if not self.speed:
            return
        ahead = (self.clock.elapsed - self.virtual_start) / self.speed - (time.perf_counter() - self.started)
        if ahead > 0:
            self.stop.wait(ahead)
