"""One kind's list-then-watch loop: resumes from the last resourceVersion after a dropped or expired stream,
relists (and diffs) after 410 Gone, and hands every resulting bus event to a sink."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from autoscaler.forwarder.changes import BusEvent, ChangeTracker
from autoscaler.kube.objects import Body
from autoscaler.kube.port import ClusterError
from autoscaler.kube.resources import KINDS
from autoscaler.kube.rest import ExpiredError, KubeRest, WatchStream

logger = logging.getLogger(__name__)
Sink = Callable[[list[BusEvent]], None]
_STREAM_ERRORS = (ClusterError, OSError, ValueError)  # API errors, dropped connections, truncated JSON


class ResourceWatcher:
    def __init__(
        self,
        rest: KubeRest,
        tracker: ChangeTracker,
        sink: Sink,
        *,
        watch_seconds: int = 300,
        backoff: float = 1.0,
    ) -> None:
        self.rest, self.tracker, self.sink = rest, tracker, sink
        self.kind = KINDS[tracker.kind]
        self.watch_seconds, self.backoff = watch_seconds, backoff
        self.resource_version = ""
        self.relists = 0
        self._stop = threading.Event()
        self._stream: WatchStream | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self.run, name=f"watch-{self.kind.plural}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._stream is not None:
            self._stream.close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _relist(self) -> None:
        items, version = self.rest.list(self.kind)
        self.sink(self.tracker.resync(items, initial=self.relists == 0))
        self.resource_version, self.relists = version, self.relists + 1

    def run(self) -> None:
        while not self._stop.is_set():
            try:
                if not self.resource_version:
                    self._relist()
                self._stream = self.rest.watch(self.kind, self.resource_version, timeout_seconds=self.watch_seconds)
                for event in self._stream:
                    obj = event.get("object") or {}
                    self.resource_version = Body(obj).resource_version or self.resource_version
                    if event.get("type") in ("ADDED", "MODIFIED", "DELETED"):
                        self.sink(self.tracker.observe(str(event["type"]), obj))
                    if self._stop.is_set():
                        return
            except ExpiredError:
                logger.info("watch of %s expired at %s; relisting", self.kind.plural, self.resource_version)
                self.resource_version = ""
            except _STREAM_ERRORS as error:
                if self._stop.is_set():
                    return
                logger.warning(
                    "watch of %s broke (%s); resuming from %s", self.kind.plural, error, self.resource_version
                )
                self._stop.wait(self.backoff)
            finally:
                self._stream = None
