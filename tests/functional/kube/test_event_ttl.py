"""Events expire an hour after their last write, as the API server's --event-ttl has them: through the official
client, in both API groups (they are one object)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import kubernetes
from kubernetes.client import ApiException

from autoscaler.kube.connect import plain_client
from autoscaler_dev.kube_emulator.emulator import KubeEmulator


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 12, 3, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def event(name: str, message: str) -> dict[str, object]:
    return {
        "metadata": {"name": name, "namespace": "default"},
        "involvedObject": {"kind": "Node", "name": "n1", "apiVersion": "v1"},
        "reason": "Testing",
        "message": message,
        "type": "Normal",
    }


def names(api: object) -> tuple[list[str], list[str]]:
    core = kubernetes.client.CoreV1Api(api)
    grouped = kubernetes.client.EventsV1Api(api)
    return (
        sorted(e.metadata.name for e in core.list_namespaced_event("default").items),
        sorted(e.metadata.name for e in grouped.list_namespaced_event("default").items),
    )


def test_an_event_expires_an_hour_after_its_last_write() -> None:
    clock = Clock()
    with KubeEmulator(clock=clock) as kube:
        api = plain_client(kube.url)
        core = kubernetes.client.CoreV1Api(api)
        core.create_namespaced_event("default", event("old", "first"))
        clock.now += timedelta(minutes=30)
        core.create_namespaced_event("default", event("updated", "first"))
        clock.now += timedelta(minutes=20)
        core.patch_namespaced_event("updated", "default", {"message": "again", "count": 2})  # written again at 50m
        clock.now += timedelta(minutes=15)  # 65 min after "old", 35 after "updated" was created, 15 after its patch
        assert kube.events.expire() == 1
        assert names(api) == (["updated"], ["updated"])
        clock.now += timedelta(minutes=44)
        assert kube.events.expire() == 0  # 59 minutes after its last write
        clock.now += timedelta(minutes=2)
        assert kube.events.expire() == 1 and names(api) == ([], [])
        try:
            core.read_namespaced_event("updated", "default")
            raise AssertionError("the expired event is still served")
        except ApiException as gone:
            assert gone.status == 404
