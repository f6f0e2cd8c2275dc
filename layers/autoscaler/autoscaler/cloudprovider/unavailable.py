"""An in-memory cache of unavailable offerings with an injected clock."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from autoscaler.clock import utc_now
from autoscaler.cloudprovider.errors import OfferingKey
from autoscaler.cloudprovider.port import UNAVAILABLE_OFFERING_TTL


class InMemoryUnavailableOfferings:
    """Entries expire ``ttl`` after they were marked; the latest mark of an offering wins."""

    def __init__(self, clock: Callable[[], datetime] = utc_now) -> None:
        self._clock = clock
        self._expiry: dict[OfferingKey, datetime] = {}

    def mark_unavailable(self, offering: OfferingKey, reason: str, ttl: timedelta = UNAVAILABLE_OFFERING_TTL) -> None:
        self._expiry[offering] = self._clock() + ttl

    def unavailable(self) -> frozenset[OfferingKey]:
        now = self._clock()
        self._expiry = {key: expiry for key, expiry in self._expiry.items() if expiry > now}
        return frozenset(self._expiry)
