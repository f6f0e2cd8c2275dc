"""A small TTL cache with an injected clock, for what a warm Lambda may reuse between invocations. Pure."""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from datetime import datetime, timedelta
from typing import Generic, TypeVar

from autoscaler.clock import utc_now

Value = TypeVar("Value")


class TTLCache(Generic[Value]):
    """Entries expire ``ttl`` after they were stored. Thread-safe (CreateFleet batching runs in threads).

    Expired entries are dropped when read, and all of them at a store once a ``ttl`` has passed since the last
    sweep: a key that is never asked for again (the instance types of an unavailable-offerings set that has
    changed since) must not stay for the life of a warm container."""

    def __init__(self, ttl: timedelta, clock: Callable[[], datetime] = utc_now) -> None:
        self.ttl = ttl
        self._clock = clock
        self._entries: dict[Hashable, tuple[datetime, Value]] = {}
        self._lock = threading.Lock()
        self._swept_at: datetime | None = None  # the clock is not read before the first store

    def get(self, key: Hashable) -> Value | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            if entry[0] <= self._clock():
                del self._entries[key]
                return None
            return entry[1]

    def put(self, key: Hashable, value: Value, ttl: timedelta | None = None) -> Value:
        with self._lock:
            now = self._clock()
            if self._swept_at is None:
                self._swept_at = now
            elif now - self._swept_at >= self.ttl:
                self._entries = {k: entry for k, entry in self._entries.items() if entry[0] > now}
                self._swept_at = now
            self._entries[key] = (now + (self.ttl if ttl is None else ttl), value)
        return value

    def __len__(self) -> int:
        return len(self._entries)

    def get_or_load(self, key: Hashable, load: Callable[[], Value]) -> Value:
        cached = self.get(key)
        return cached if cached is not None else self.put(key, load())

    def invalidate(self, key: Hashable | None = None) -> None:
        with self._lock:
            if key is None:
                self._entries.clear()
            else:
                self._entries.pop(key, None)
