"""The forwarder's main loop: keep (or seek) the lease; while holding it, watch every kind and flush
coalesced events to the bus; on losing it, stop watching and drop what was not sent (the new holder
relists, and every function's schedule catches what falls between)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence

from autoscaler.events import WATCHED_KINDS
from autoscaler.forwarder.changes import BusEvent, ChangeTracker, Coalescer
from autoscaler.forwarder.election import LeaseElector
from autoscaler.forwarder.publisher import EventBridgePublisher
from autoscaler.forwarder.watcher import ResourceWatcher
from autoscaler.kube.rest import KubeRest

logger = logging.getLogger(__name__)


class Forwarder:
    def __init__(
        self,
        rest: KubeRest,
        publisher: EventBridgePublisher,
        elector: LeaseElector,
        cluster_name: str,
        *,
        window: float = 1.0,
        retry_period: float = 2.0,
        watch_seconds: int = 300,
        kinds: Sequence[str] = WATCHED_KINDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.rest, self.publisher, self.elector, self.cluster_name = rest, publisher, elector, cluster_name
        self.retry_period, self.watch_seconds, self.kinds, self.clock = retry_period, watch_seconds, kinds, clock
        self.coalescer = Coalescer(window)
        self._lock = threading.Lock()
        self.watchers: list[ResourceWatcher] = []

    def _sink(self, events: list[BusEvent]) -> None:
        if events:
            with self._lock:
                self.coalescer.add(events, self.clock())

    def _start_watching(self) -> None:
        self.watchers = [
            ResourceWatcher(
                self.rest, ChangeTracker(kind, self.cluster_name), self._sink, watch_seconds=self.watch_seconds
            )
            for kind in self.kinds
        ]
        for watcher in self.watchers:
            watcher.start()

    def _stop_watching(self) -> None:
        for watcher in self.watchers:
            watcher.stop()
        self.watchers = []

    def flush(self, everything: bool = False) -> int:
        with self._lock:
            due = self.coalescer.due(self.clock(), everything)
        if due:
            self.publisher.publish(due)
        return len(due)

    def run(self, stop: threading.Event) -> None:
        """Until ``stop`` is set. Renews the lease every ``retry_period``; flushes every quarter window."""
        next_renewal = 0.0
        try:
            while not stop.is_set():
                if self.clock() >= next_renewal:
                    leading = self.elector.try_acquire_or_renew()
                    next_renewal = self.clock() + self.retry_period
                    if leading and not self.watchers:
                        logger.info("leading: watching %s", ", ".join(self.kinds))
                        self._start_watching()
                    elif not leading and self.watchers:
                        logger.warning("lost the lease: no longer forwarding")
                        self._stop_watching()
                        with self._lock:
                            self.coalescer.clear()
                if self.watchers:
                    self.flush()
                stop.wait(min(self.coalescer.window / 4, self.retry_period))
        finally:
            if self.watchers:
                self._stop_watching()
                self.flush(everything=True)
            self.elector.release()
