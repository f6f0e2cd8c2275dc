"""End to end: emulator -> two forwarder replicas (Lease election) -> moto EventBridge -> rule -> moto SQS."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from autoscaler.events import FORWARDER_SOURCE
from autoscaler.forwarder.app import Forwarder
from autoscaler.forwarder.election import LeaseElector
from autoscaler.forwarder.publisher import EventBridgePublisher
from autoscaler_dev.kube_emulator.emulator import KubeEmulator
from tests.support.aws import MotoEndpoint
from tests.support.kube import node, nodeclaim, nodeclass, nodepool, pod, rest_for


@dataclass
class Replica:
    name: str
    forwarder: Forwarder
    publisher: EventBridgePublisher
    stop: threading.Event
    thread: threading.Thread

    def halt(self) -> None:
        self.stop.set()
        self.thread.join(timeout=10)


class Bus:
    """A custom bus whose rule sends the forwarder's events to an SQS queue."""

    def __init__(self, moto: MotoEndpoint) -> None:
        self.name = f"cluster-events-{uuid.uuid4().hex[:8]}"
        self.events, self.sqs = moto.client("events"), moto.client("sqs")
        self.events.create_event_bus(Name=self.name)
        self.queue = self.sqs.create_queue(QueueName=self.name)["QueueUrl"]
        arn = self.sqs.get_queue_attributes(QueueUrl=self.queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        pattern = json.dumps({"source": [FORWARDER_SOURCE]})
        self.events.put_rule(Name="to-queue", EventBusName=self.name, EventPattern=pattern)
        self.events.put_targets(Rule="to-queue", EventBusName=self.name, Targets=[{"Id": "queue", "Arn": arn}])
        self.received: list[dict[str, Any]] = []

    def wait_for(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 10) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for event in self.received:
                if predicate(event):
                    return event
            messages = self.sqs.receive_message(QueueUrl=self.queue, MaxNumberOfMessages=10, WaitTimeSeconds=0)
            for message in messages.get("Messages", []):
                self.received.append(json.loads(message["Body"]))
                self.sqs.delete_message(QueueUrl=self.queue, ReceiptHandle=message["ReceiptHandle"])
            time.sleep(0.05)
        raise AssertionError(
            f"no matching event; received {[(e['detail-type'], e['detail']['object']['name']) for e in self.received]}"
        )


def about(detail_type: str, name: str) -> Callable[[dict[str, Any]], bool]:
    return lambda e: e["detail-type"] == detail_type and e["detail"]["object"]["name"] == name


@pytest.fixture
def bus(moto: MotoEndpoint) -> Bus:
    return Bus(moto)


@pytest.fixture
def replicas(kube: KubeEmulator, moto: MotoEndpoint, bus: Bus) -> Iterator[list[Replica]]:
    started = []
    for name in ("forwarder-a", "forwarder-b"):
        rest = rest_for(kube)
        publisher = EventBridgePublisher(moto.client("events"), bus.name, base_delay=0.01)
        elector = LeaseElector(rest, "kube-system", "forwarder", name, lease_duration=2, renew_deadline=1.5)
        forwarder = Forwarder(rest, publisher, elector, "demo", window=0.2, retry_period=0.2, watch_seconds=30)
        stop = threading.Event()
        thread = threading.Thread(target=forwarder.run, args=(stop,), daemon=True)
        thread.start()
        started.append(Replica(name, forwarder, publisher, stop, thread))
    yield started
    for replica in started:
        replica.halt()


def _leader(replicas: list[Replica], timeout: float = 5) -> Replica:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        leading = [r for r in replicas if r.forwarder.elector.leading and r.forwarder.watchers]
        if leading and all(w.relists for w in leading[0].forwarder.watchers):
            return leading[0]
        time.sleep(0.05)
    raise AssertionError("no replica took the lease")


def test_changes_reach_the_queue_from_the_leader_only(kube: KubeEmulator, bus: Bus, replicas: list[Replica]) -> None:
    kube.create(pod("already-pending", unschedulable=True))  # before anyone watched: found by the initial list
    leader = _leader(replicas)
    kube.create(pod("web", unschedulable=True))
    kube.create(nodepool("default"))
    kube.create(nodeclass("default"))
    kube.create(node("ip-10-0-1-5", **{"karpenter.sh/nodepool": "default"}))
    claim = nodeclaim("default-abcde")
    claim["metadata"]["finalizers"] = ["karpenter.sh/termination"]
    kube.create(claim)
    kube.create(pod("batch", node="ip-10-0-1-5"))
    kube.delete("karpenter.sh/v1", "NodeClaim", "default-abcde")
    kube.delete("v1", "Pod", "batch")

    pending = bus.wait_for(about("Pod Unschedulable", "web"))
    assert pending["source"] == FORWARDER_SOURCE
    assert pending["detail"]["object"]["namespace"] == "default" and pending["detail"]["cluster"] == "demo"
    assert pending["detail"]["message"] == "0/3 nodes are available"
    bus.wait_for(about("Pod Unschedulable", "already-pending"))
    bus.wait_for(about("NodePool Created", "default"))
    bus.wait_for(about("EC2NodeClass Created", "default"))
    assert bus.wait_for(about("Node Created", "ip-10-0-1-5"))["detail"]["nodePool"] == "default"
    deleting = bus.wait_for(about("NodeClaim Deleting", "default-abcde"))
    assert deleting["detail"]["object"]["deletionTimestamp"]
    freed = bus.wait_for(about("Pod Capacity Freed", "batch"))
    assert freed["detail"]["nodeName"] == "ip-10-0-1-5" and freed["detail"]["reason"] == "Deleted"

    follower = next(r for r in replicas if r is not leader)
    assert leader.publisher.stats.sent >= 8 and follower.publisher.stats.sent == 0
    assert not follower.forwarder.watchers
    keys = [(e["detail-type"], e["detail"]["object"]["name"]) for e in bus.received]
    assert len(keys) == len(set(keys))  # each change once


def test_bursts_coalesce_per_object(kube: KubeEmulator, bus: Bus, replicas: list[Replica]) -> None:
    _leader(replicas)
    kube.create(nodepool("burst"))
    nodepools = kube.resource("karpenter.sh/v1", "NodePool")
    for weight in range(1, 6):
        kube.store.patch(nodepools, "", "burst", lambda o, w=weight: {**o, "spec": {**o["spec"], "weight": w}})
    latest = kube.get("karpenter.sh/v1", "NodePool", "burst")["metadata"]["resourceVersion"]  # type: ignore[index]
    bus.wait_for(about("NodePool Created", "burst"))

    def is_update(e: dict[str, Any]) -> bool:
        return e["detail-type"] == "NodePool Updated"

    bus.wait_for(lambda e: is_update(e) and e["detail"]["object"]["resourceVersion"] == latest)
    with pytest.raises(AssertionError):  # nothing more arrives for three windows
        bus.wait_for(lambda e: is_update(e) and e["detail"]["object"]["resourceVersion"] != latest, timeout=0.6)
    # the five patches go as the first (if a flush fell inside the burst) and the latest, never one per patch
    updates = [e["detail"]["object"]["resourceVersion"] for e in bus.received if is_update(e)]
    assert 1 <= len(updates) <= 2 and updates[-1] == latest


def test_watches_recover_from_drops_and_expiry(kube: KubeEmulator, bus: Bus, replicas: list[Replica]) -> None:
    _leader(replicas)
    assert kube.drop_watches(abort=True) == 5
    kube.create(pod("after-drop", unschedulable=True))
    bus.wait_for(about("Pod Unschedulable", "after-drop"))
    kube.compact()  # the version the watches resume from is now too old: 410, relist, diff
    kube.drop_watches(abort=False)
    kube.create(node("after-expiry"))
    bus.wait_for(about("Node Created", "after-expiry"))


def test_the_other_replica_takes_over(kube: KubeEmulator, bus: Bus, replicas: list[Replica]) -> None:
    leader = _leader(replicas)
    leader.halt()  # a clean shutdown hands the lease back
    successor = _leader([r for r in replicas if r is not leader])
    kube.create(node("after-failover"))
    bus.wait_for(about("Node Created", "after-failover"))
    assert successor.publisher.stats.sent >= 1
    lease = kube.get("coordination.k8s.io/v1", "Lease", "forwarder", "kube-system")
    assert lease is not None and lease["spec"]["holderIdentity"] == successor.name
    assert lease["spec"]["leaseTransitions"] >= 1
