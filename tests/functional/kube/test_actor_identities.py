"""The embedded world's actors act as who they are in a cluster, checked by the emulator's gate: the controllers
with their kube-controller-manager service accounts, the kube-scheduler, each kubelet as its node. The bootstrap
policy lets each do its part and nothing else; a permission taken away is a counted 403."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from autoscaler_dev.kube_emulator import authentication as authn
from autoscaler_dev.kube_emulator.emulator import KubeEmulator
from autoscaler_dev.kube_emulator.enforcement import ActingAs, enforce
from autoscaler_dev.kube_emulator.errors import ApiError
from autoscaler_dev.kube_emulator.gate import KubeGate
from autoscaler_dev.world import kubelet
from autoscaler_dev.world.controllers import ControllerManager
from autoscaler_dev.world.kube_access import SCHEDULER, controller
from tests.support.kube import replicaset_controller_without_pod_create

REPLICASET_CONTROLLER = controller("replicaset-controller").name
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def deployment(replicas: int) -> dict[str, Any]:
    template = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "app", "image": "web:1"}]}}
    spec = {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}}, "template": template}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": spec,
    }


def world(*rbac: dict[str, Any]) -> tuple[KubeEmulator, KubeGate, ControllerManager]:
    kube = KubeEmulator(clock=lambda: NOW)
    gate = enforce(kube, rbac)
    return kube, gate, ControllerManager(kube, lambda: NOW)


def test_under_the_bootstrap_policy_the_controllers_roll_out_a_deployment_with_nothing_refused() -> None:
    kube, gate, manager = world()
    kube.create(deployment(3))
    manager.step()
    manager.step()
    assert len(kube.list("apps/v1", "ReplicaSet")) == 1
    assert len(kube.list("v1", "Pod")) == 3
    assert sum(gate.denied.values()) == 0


def test_a_replicaset_controller_that_may_not_create_pods_is_refused_and_counted() -> None:
    kube, gate, manager = world(replicaset_controller_without_pod_create())
    kube.create(deployment(3))
    manager.step()
    manager.step()
    assert len(kube.list("apps/v1", "ReplicaSet")) == 1  # the deployment-controller still did its part
    assert kube.list("v1", "Pod") == []
    assert gate.denied[REPLICASET_CONTROLLER] == 2  # one refused create per step, then that pass gives up
    first = gate.denials[0]
    assert (first.user, first.verb, first.resource, first.namespace) == (
        REPLICASET_CONTROLLER,
        "create",
        "pods",
        "default",
    )
    assert set(gate.denied) == {REPLICASET_CONTROLLER}


def pending_pod(kube: KubeEmulator) -> dict[str, Any]:
    return kube.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "namespace": "default"},
            "spec": {"containers": [{"name": "app", "image": "app:1"}]},
        }
    )


def test_the_scheduler_binds_and_only_the_nodes_own_kubelet_reports_the_pod_running() -> None:
    kube, gate, _ = world()
    pod = ActingAs.of(kube, SCHEDULER).bind(pending_pod(kube), "n1")
    with pytest.raises(ApiError) as refused:
        kubelet.start(ActingAs.of(kube, authn.node("n2")), pod, "2026-01-01T00:00:00Z")
    assert refused.value.code == 403 and gate.denied["system:node:n2"] == 1
    started = kubelet.start(ActingAs.of(kube, authn.node("n1")), pod, "2026-01-01T00:00:00Z")
    assert started["spec"]["nodeName"] == "n1" and started["status"]["phase"] == "Running"
    assert sum(gate.denied.values()) == 1


def test_a_controller_may_not_bind_pods_as_the_scheduler_does() -> None:
    kube, gate, _ = world()
    with pytest.raises(ApiError) as refused:
        ActingAs.of(kube, controller("replicaset-controller")).bind(pending_pod(kube), "n1")
    assert refused.value.code == 403
    assert gate.denials[0].resource == "pods/binding"
    assert kube.get("v1", "Pod", "p")["spec"].get("nodeName") is None  # type: ignore[index]
