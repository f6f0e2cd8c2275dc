"""What the interruption controller's tests share: instances, a moving clock, a recording dead-letter queue, how a
message is queued and the controller made, and what a drained node looks like."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from autoscaler.apis.v1 import labels as wk
from autoscaler.cloudprovider.unavailable import InMemoryUnavailableOfferings
from autoscaler.controllers.interruption import (
    InterruptionController,
    QueuedMessage,
)
from tests.support.memory_cluster import MemoryCluster

T0 = datetime(2026, 3, 2, 14, 5, tzinfo=UTC)
A, B, C = "i-000000000000000a1", "i-000000000000000b2", "i-000000000000000c3"
FOREIGN = "i-0ffffffffffffffff"


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        self.now += timedelta(milliseconds=10)  # every reading moves on, so action times are ordered
        return self.now


class RecordingDeadLetters:
    def __init__(self, *errors: Exception) -> None:
        self.sent: list[tuple[str, str]] = []
        self.attributes: list[Mapping[str, str]] = []
        self.errors = list(errors)

    def send(self, body: str, attributes: Mapping[str, str]) -> None:
        if self.errors:
            raise self.errors.pop(0)
        self.sent.append((attributes["sourceMessageId"], attributes["reason"]))
        self.attributes.append(attributes)


def queued(body: dict[str, Any] | str, message_id: str, receive_count: int = 1) -> QueuedMessage:
    text = body if isinstance(body, str) else json.dumps(body)
    return QueuedMessage(message_id, text, sent_at=T0, receive_count=receive_count)


def make(
    cluster: MemoryCluster, offerings: InMemoryUnavailableOfferings, clock: Clock, **kwargs: Any
) -> InterruptionController:
    return InterruptionController(
        cluster, offerings, kwargs.pop("dead_letters", RecordingDeadLetters()), clock=clock, **kwargs
    )


def assert_cordoned_and_deleting(cluster: MemoryCluster, nodeclaim: str, node: str) -> None:
    spec = cluster.stored("Node", node)["spec"]  # type: ignore[index]
    assert spec["unschedulable"] is True
    assert {"key": wk.TAINT_DISRUPTED, "effect": "NoSchedule"} in spec["taints"]
    assert cluster.stored("NodeClaim", nodeclaim)["metadata"].get("deletionTimestamp")  # type: ignore[index]
