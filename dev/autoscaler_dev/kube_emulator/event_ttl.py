"""Events expire an hour after their last write, as kube-apiserver's ``--event-ttl`` (1 h by default, EKS's too)
has etcd drop them; without it a long run's Events only grow, which no cluster shows.

An admission step notes when each Event (either API group: they are one object) was last written; ``expire``
removes those whose hour is over. The emulator has no background loop of its own, so its user calls ``expire``
as time passes (the embedded world does on every step).
"""

from __future__ import annotations

import heapq
from datetime import datetime, timedelta

from autoscaler_dev.kube_emulator.errors import ApiError
from autoscaler_dev.kube_emulator.resources import Obj, ResourceType
from autoscaler_dev.kube_emulator.store import Store

EVENT_TTL = timedelta(hours=1)
Key = tuple[str, str]  # (namespace, name)


class EventExpiry:
    def __init__(self, store: Store, core: ResourceType, ttl: timedelta = EVENT_TTL) -> None:
        self.store, self.core, self.ttl = store, core, ttl
        self._written: dict[Key, datetime] = {}  # each Event's last write
        self._due: list[tuple[datetime, Key]] = []  # (expiry, event), possibly stale: checked against _written
        self.expired = 0

    def admit(self, operation: str, resource: ResourceType, old: Obj | None, new: Obj) -> Obj:
        if resource.kind == "Event":
            metadata = new.get("metadata") or {}
            key = (str(metadata.get("namespace") or ""), str(metadata.get("name") or ""))
            now = self.store.clock()
            self._written[key] = now
            heapq.heappush(self._due, (now + self.ttl, key))
        return new

    def expire(self) -> int:
        """Remove the Events not written for ``ttl``; how many were."""
        now, removed = self.store.clock(), 0
        while self._due and self._due[0][0] <= now:
            _, key = heapq.heappop(self._due)
            written = self._written.get(key)
            if written is None or written + self.ttl > now:
                continue  # written again since: a later entry is due
            del self._written[key]
            try:
                self.store.delete(self.core, *key)
                removed += 1
            except ApiError:  # deleted by a client already
                continue
        self.expired += removed
        return removed
