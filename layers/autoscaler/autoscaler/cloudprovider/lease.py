"""The Leases port: mutual exclusion between passes of a function that must not overlap, kept in shared state
with an expiry so that a pass that died holding a lease cannot block the others for long. Pure.

``providers.aws.leases`` keeps them in the state table; :class:`InMemoryLeases` serves tests and local runs;
:func:`holding` is how every pass takes one."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from typing import Protocol

from autoscaler.clock import utc_now
from autoscaler.cloudprovider.errors import CloudProviderError

log = logging.getLogger(__name__)


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


@contextlib.contextmanager
def holding(
    leases: Leases | None, name: str, holder: str, ttl: timedelta, *, pass_if_unknown: bool = False
) -> Iterator[bool]:
    """Hold lease ``name`` for ``holder`` while the block runs; yield whether the block may go on (False: another
    holder has it). A lease that cannot be read raises the CloudProviderError, or with ``pass_if_unknown`` lets the
    block run (for passes whose overlap costs only work, never harm). Giving the lease up never fails the block: one
    that could not be released expires after ``ttl``. No ``leases`` (a local run): the block always goes on."""
    if leases is None:
        yield True
        return
    try:
        held = leases.acquire(name, holder, ttl)
    except CloudProviderError as error:
        if not pass_if_unknown:
            raise
        log.warning("the %s lease is unknown; passing anyway: %s", name, error)
        held = True
    if not held:
        yield False
        return
    try:
        yield True
    finally:
        try:
            leases.release(name, holder)
        except CloudProviderError as error:
            log.warning("could not release the %s lease (it expires by itself): %s", name, error)
