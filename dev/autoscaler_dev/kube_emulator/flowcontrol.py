"""Priority and fairness, as a caller feels it: past a rate per identity, 429 Too Many Requests with Retry-After;
and every request takes time, on the virtual clock.

- Each user has a token bucket (``rate`` requests per second, ``burst`` deep) refilled on the world's clock; an
  empty bucket rejects the request with 429 and ``Retry-After`` (the API server's answer when a priority level's
  queues are full). ``system:masters`` is exempt, as the ``exempt`` priority level is.
- Latency is drawn per verb (reads ~1-5 ms, lists ~10-60 ms, writes ~3-12 ms) from a seeded generator and moves
  the virtual clock to the request's start plus its latency (never back), so requests in flight together overlap
  instead of adding up, and no wall time is spent.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Protocol

from autoscaler_dev.kube_emulator.authentication import MASTERS, User

LATENCY_MS: dict[str, tuple[float, float, float]] = {  # verb -> (low, high, mode) in milliseconds
    "get": (1.0, 5.0, 2.0),
    "list": (10.0, 60.0, 20.0),
    "watch": (1.0, 5.0, 2.0),
    "create": (3.0, 12.0, 5.0),
    "update": (3.0, 12.0, 5.0),
    "patch": (3.0, 12.0, 5.0),
    "delete": (3.0, 12.0, 5.0),
    "deletecollection": (10.0, 60.0, 20.0),
}


class VirtualTime(Protocol):
    """The world's clock as flow control needs it (``autoscaler_dev.world.clock.VirtualClock``)."""

    @property
    def elapsed(self) -> float: ...

    def jump(self, to: float) -> None: ...


class _WallTime:
    """Seconds of the process's monotonic clock, when the emulator runs without a virtual clock: latency is then
    not applied (there is nothing to move)."""

    @property
    def elapsed(self) -> float:
        return time.monotonic()

    def jump(self, to: float) -> None:
        return None


@dataclass(frozen=True)
class FlowSettings:
    rate: float = 100.0  # requests per second per identity
    burst: int = 200
    retry_after: int = 1  # seconds, as the API server sends it
    latency: bool = True
    seed: int = 0


@dataclass
class _Bucket:
    tokens: float
    at: float


class FlowControl:
    def __init__(self, settings: FlowSettings | None = None, clock: VirtualTime | None = None) -> None:
        self.settings = settings or FlowSettings()
        self.clock: VirtualTime = clock or _WallTime()
        self.throttled: Counter[str] = Counter()  # user -> requests rejected with 429
        self._buckets: dict[str, _Bucket] = {}
        self._random = random.Random(self.settings.seed)
        self._lock = threading.Lock()

    def admit(self, user: User) -> int | None:
        """None when the request may go ahead; otherwise the Retry-After seconds of its 429."""
        if MASTERS in user.groups:
            return None
        rate, burst = self.settings.rate, float(self.settings.burst)
        with self._lock:
            now = self.clock.elapsed
            bucket = self._buckets.setdefault(user.name, _Bucket(burst, now))
            bucket.tokens = min(burst, bucket.tokens + max(0.0, now - bucket.at) * rate)
            bucket.at = now
            if bucket.tokens >= 1.0:
                bucket.tokens -= 1.0
                return None
            self.throttled[user.name] += 1
        return self.settings.retry_after

    def started(self) -> float:
        return self.clock.elapsed

    def finish(self, verb: str, started: float) -> float:
        """Move the virtual clock to ``started`` plus this request's latency; returns the latency in seconds."""
        if not self.settings.latency:
            return 0.0
        low, high, mode = LATENCY_MS.get(verb, LATENCY_MS["get"])
        with self._lock:
            seconds = self._random.triangular(low, high, mode) / 1000.0
        self.clock.jump(started + seconds)
        return seconds
