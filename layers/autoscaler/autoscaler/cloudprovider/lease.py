"""The Leases port: mutual exclusion between passes of a function that must not overlap, kept in shared state
with an expiry so that a pass that died holding a lease cannot block the others for long. Pure.

``providers.aws.leases`` keeps them in the state table; :class:`InMemoryLeases` serves tests and local runs."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Protocol

from autoscaler.clock import utc_now


class Leases(Protocol):
    def acquire(self, name: str, holder: str, ttl: timedelta) -> bool:
        """Take lease ``name`` for ``holder`` until now + ``ttl`` when it is free, expired or already ``holder``'s
        (which extends it). False when another holder has it. Raises TransientCloudError."""
        ...

    def release(self, name: str, holder: str) -> None:
        """Give lease ``name`` up if ``holder`` still has it; otherwise do nothing (it expired and was taken)."""
        ...


class InMemoryLeases:
    def __init__(self, clock: Callable[[], datetime] = utc_now) -> None:
        self._clock = clock
        self._held: dict[str, tuple[str, datetime]] = {}

    def acquire(self, name: str, holder: str, ttl: timedelta) -> bool:
        now = self._clock()
        current = self._held.get(name)
        if current is not None and current[0] != holder and current[1] > now:
            return False
        self._held[name] = (holder, now + ttl)
        return True

    def release(self, name: str, holder: str) -> None:
        if name in self._held and self._held[name][0] == holder:
            del self._held[name]
