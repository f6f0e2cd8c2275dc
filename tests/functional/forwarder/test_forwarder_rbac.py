"""The real forwarder under the emulator's RBAC, with its ServiceAccount's credentials and the shipped
``infra/manifests/forwarder/rbac.yaml``: it takes its Lease, lists and watches every kind it forwards and
delivers events, with not one request refused."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from autoscaler.forwarder.app import Forwarder
from autoscaler.forwarder.election import LeaseElector
from autoscaler.forwarder.publisher import EventBridgePublisher
from autoscaler.kube.connect import plain_client
from autoscaler.kube.rest import KubeRest
from autoscaler_dev.kube_emulator.emulator import KubeEmulator
from autoscaler_dev.kube_emulator.enforcement import enforce
from autoscaler_dev.kube_emulator.gate import KubeGate
from autoscaler_dev.world.kube_access import DEFAULT_RBAC, FORWARDER, load_manifests
from tests.functional.forwarder.test_forwarder_e2e import Bus, about
from tests.support.aws import MotoEndpoint
from tests.support.kube import FAST_RETRIES, nodepool, pod


@pytest.fixture
def gate(kube: KubeEmulator) -> KubeGate:
    return enforce(kube, load_manifests(DEFAULT_RBAC))


@pytest.fixture
def forwarder(kube: KubeEmulator, gate: KubeGate, moto: MotoEndpoint) -> Iterator[tuple[Forwarder, Bus]]:
    bus = Bus(moto)
    rest = KubeRest(plain_client(kube.url, gate.authenticator.issue(FORWARDER)), retry=FAST_RETRIES)
    elector = LeaseElector(rest, "kube-system", "serverless-karpenter-forwarder", "replica-a", lease_duration=2)
    publisher = EventBridgePublisher(moto.client("events"), bus.name, base_delay=0.01)
    running = Forwarder(rest, publisher, elector, "demo", window=0.2, retry_period=0.2, watch_seconds=30)
    stop = threading.Event()
    thread = threading.Thread(target=running.run, args=(stop,), daemon=True)
    thread.start()
    yield running, bus
    stop.set()
    thread.join(timeout=10)


def test_the_forwarder_needs_nothing_its_role_does_not_grant(
    kube: KubeEmulator, gate: KubeGate, forwarder: tuple[Forwarder, Bus]
) -> None:
    running, bus = forwarder
    deadline = time.monotonic() + 10
    while not (running.elector.leading and running.watchers and all(w.relists for w in running.watchers)):
        assert time.monotonic() < deadline, f"the forwarder never took its lease and listed: {gate.denials}"
        time.sleep(0.05)
    kube.create(pod("web", unschedulable=True))
    kube.create(nodepool("default"))
    bus.wait_for(about("Pod Unschedulable", "web"))
    bus.wait_for(about("NodePool Created", "default"))
    lease = kube.get("coordination.k8s.io/v1", "Lease", "serverless-karpenter-forwarder", "kube-system")
    assert lease is not None and lease["spec"]["holderIdentity"] == "replica-a"
    assert not gate.denials, gate.denials


def test_a_lease_of_another_name_is_refused(kube: KubeEmulator, gate: KubeGate) -> None:
    rest = KubeRest(plain_client(kube.url, gate.authenticator.issue(FORWARDER)), retry=FAST_RETRIES)
    elector = LeaseElector(rest, "kube-system", "forwarder", "replica-a")
    kube.create(
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "forwarder", "namespace": "kube-system"},
            "spec": {},
        }
    )
    assert not elector.try_acquire_or_renew()
    assert [(d.verb, d.resource, d.name) for d in gate.denials][:1] == [
        ("get", "leases.coordination.k8s.io", "forwarder")
    ]
