"""Put cluster events on the EventBridge bus: batches of up to 10 entries, failed entries retried with backoff."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from autoscaler.events import FORWARDER_SOURCE
from autoscaler.forwarder.changes import BusEvent

logger = logging.getLogger(__name__)

BATCH_SIZE = 10  # PutEvents' limit
MAX_ENTRY_BYTES = 256 * 1024


@dataclass
class PublishStats:
    sent: int = 0
    dropped: int = 0  # failed through every attempt, or too large: logged, and caught by the schedules


class EventBridgePublisher:
    def __init__(
        self,
        client: Any,
        bus_name: str,
        *,
        attempts: int = 5,
        base_delay: float = 0.2,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.client, self.bus_name = client, bus_name
        self.attempts, self.base_delay, self.sleep = attempts, base_delay, sleep
        self.stats = PublishStats()

    def entry(self, event: BusEvent) -> dict[str, Any]:
        return {
            "Source": FORWARDER_SOURCE,
            "DetailType": event.detail_type,
            "Detail": json.dumps(event.detail, separators=(",", ":")),
            "EventBusName": self.bus_name,
            "Time": event.time,
        }

    def publish(self, events: Sequence[BusEvent]) -> None:
        entries = []
        for event in events:
            entry = self.entry(event)
            if len(entry["Detail"]) + len(entry["DetailType"]) + len(FORWARDER_SOURCE) > MAX_ENTRY_BYTES:
                logger.error(
                    "dropping %s for %s: larger than an EventBridge entry may be", event.detail_type, event.key
                )
                self.stats.dropped += 1
                continue
            entries.append(entry)
        for start in range(0, len(entries), BATCH_SIZE):
            self._put(entries[start : start + BATCH_SIZE])

    def _put(self, batch: list[dict[str, Any]]) -> None:
        pending = batch
        for attempt in range(self.attempts):
            if attempt:
                self.sleep(self.base_delay * 2 ** (attempt - 1))
            try:
                response = self.client.put_events(Entries=pending)
            except Exception as error:  # botocore's client and connection errors: the whole batch failed
                logger.warning("PutEvents failed (attempt %d): %s", attempt + 1, error)
                continue
            results = response.get("Entries") or []
            failed = [entry for entry, result in zip(pending, results, strict=False) if result.get("ErrorCode")]
            self.stats.sent += len(pending) - len(failed)
            if not failed:
                return
            logger.warning("%d of %d events failed (attempt %d); retrying them", len(failed), len(pending), attempt + 1)
            pending = failed
        self.stats.dropped += len(pending)
        logger.error("dropping %d events after %d attempts", len(pending), self.attempts)
