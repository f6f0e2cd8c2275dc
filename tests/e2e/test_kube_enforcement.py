"""The embedded world's RBAC can fail a deployment: with manifests whose functions' ClusterRole lacks ``patch`` on
``nodes``, a bounded slice of the spread scenario reports ``rbac_denied > 0`` (the provisioner cannot register a
Node), the denial is an invariant violation, and no pod runs; the same slice under the shipped manifests has none,
even with the API server throttling the functions."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from moto.moto_api._internal.models import moto_api_backend

from autoscaler_dev.kube_emulator.flowcontrol import FlowSettings
from autoscaler_dev.world.kube_access import DEFAULT_RBAC, FUNCTIONS, KubeEnforcement
from autoscaler_dev.world.runner import Simulation
from autoscaler_dev.world.scenario import Scenario
from tests.support.kube import replicaset_controller_without_pod_create

SPREAD = Path(__file__).resolve().parents[2] / "events" / "scenarios" / "spread.yaml"
SLICE_SECONDS = 240  # long enough for the first Nodes to join and be registered


@pytest.fixture(autouse=True)
def fresh_moto() -> Iterator[None]:
    yield
    moto_api_backend.reset()


def without_patch_on_nodes(directory: Path) -> Path:
    functions = DEFAULT_RBAC[0]
    documents = [d for d in yaml.safe_load_all(functions.read_text()) if d]
    for document in documents:
        for rule in document.get("rules") or ():
            if rule.get("resources") == ["nodes"]:
                rule["verbs"] = [v for v in rule["verbs"] if v != "patch"]
    path = directory / "rbac-without-node-patch.yaml"
    path.write_text(yaml.safe_dump_all(documents))
    return path


def test_a_missing_verb_is_found_counted_and_a_violation(tmp_path: Path) -> None:
    scenario = Scenario.load(SPREAD).model_copy(update={"duration": SLICE_SECONDS, "expect": {}})
    broken = KubeEnforcement(rbac_paths=(without_patch_on_nodes(tmp_path), DEFAULT_RBAC[1]))
    summary = Simulation(scenario, kube_enforcement=broken).run().summary
    assert summary["rbac_denied"] > 0
    first = summary["rbac_first_denials"][0]
    assert (first["user"], first["verb"], first["resource"]) == (FUNCTIONS.name, "patch", "nodes")
    assert 'cannot patch resource "nodes" in API group "" at the cluster scope' in first["message"]
    assert summary["invariants"]["kube_request_forbidden"] >= 1
    assert summary["pods_running"] == 0


def test_the_shipped_manifests_let_the_same_slice_run_even_when_the_api_server_throttles() -> None:
    """Under the shipped RBAC, nothing is refused; under a tight priority-and-fairness rate the functions are
    answered 429, wait out Retry-After, and every pod still runs with no invocation failing."""
    scenario = Scenario.load(SPREAD).model_copy(update={"duration": SLICE_SECONDS, "expect": {}})
    tight = KubeEnforcement(flow=FlowSettings(rate=10, burst=20))
    summary = Simulation(scenario, kube_enforcement=tight).run().summary
    assert summary["rbac_denied"] == 0 and summary["rbac_first_denials"] == []
    assert summary["kube_throttled"] > 0
    assert summary["function_errors"] == 0
    assert summary["pods_running"] == summary["pods_total"] > 0


def written(directory: Path, manifest: dict[str, Any]) -> Path:
    path = directory / "rbac.yaml"
    path.write_text(yaml.safe_dump(manifest))
    return path


def test_an_actor_refused_a_write_is_counted_and_a_violation(tmp_path: Path) -> None:
    """The world's own actors are checked too: a replicaset-controller that may not create pods is refused, the
    denial counted under its service account and an invariant violation, and the Deployment never gets a pod."""
    scenario = Scenario.load(SPREAD).model_copy(update={"duration": SLICE_SECONDS, "expect": {}})
    broken = KubeEnforcement(rbac_paths=(*DEFAULT_RBAC, written(tmp_path, replicaset_controller_without_pod_create())))
    summary = Simulation(scenario, kube_enforcement=broken).run().summary
    assert summary["rbac_denied"] > 0
    first = summary["rbac_first_denials"][0]
    user = "system:serviceaccount:kube-system:replicaset-controller"
    assert (first["user"], first["verb"], first["resource"], first["namespace"]) == (user, "create", "pods", "default")
    assert {d["user"] for d in summary["rbac_first_denials"]} == {user}
    assert summary["invariants"]["kube_request_forbidden"] >= 1
    assert summary["pods_total"] == 0


BUFFER = SPREAD.parent / "capacity-buffer.yaml"


def without_buffer_status(directory: Path) -> Path:
    documents = [d for d in yaml.safe_load_all(DEFAULT_RBAC[0].read_text()) if d]
    for document in documents:
        document["rules"] = [r for r in document.get("rules") or () if r.get("resources") != ["capacitybuffers/status"]]
    path = directory / "rbac-without-buffer-status.yaml"
    path.write_text(yaml.safe_dump_all(documents))
    return path


def test_buffer_status_needs_its_rbac(tmp_path: Path) -> None:
    scenario = Scenario.load(BUFFER).model_copy(update={"duration": 60, "expect": {}})
    broken = KubeEnforcement(rbac_paths=(without_buffer_status(tmp_path), DEFAULT_RBAC[1]))
    summary = Simulation(scenario, kube_enforcement=broken).run().summary
    denied = [d for d in summary["rbac_first_denials"] if d["user"] == FUNCTIONS.name]
    assert denied and denied[0]["verb"] == "update" and denied[0]["resource"].startswith("capacitybuffers")
    assert summary["function_errors"] == 0  # a status the pass cannot write is reported, not a failed pass


def without_overlay_status(directory: Path) -> Path:
    documents = [d for d in yaml.safe_load_all(DEFAULT_RBAC[0].read_text()) if d]
    for document in documents:
        document["rules"] = [r for r in document.get("rules") or () if r.get("resources") != ["nodeoverlays/status"]]
    path = directory / "rbac-without-overlay-status.yaml"
    path.write_text(yaml.safe_dump_all(documents))
    return path


def test_overlay_status_needs_its_rbac(tmp_path: Path) -> None:
    base = Scenario.load(BUFFER)
    overlay = {
        "apiVersion": "karpenter.sh/v1alpha1",
        "kind": "NodeOverlay",
        "metadata": {"name": "cheap-c5"},
        "spec": {"requirements": [{"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["c5"]}]},
    }
    overlay["spec"]["priceAdjustment"] = "-50%"
    manifests = [m for m in base.manifests if m.get("kind") != "CapacityBuffer"] + [overlay]
    scenario = base.model_copy(
        update={"duration": 60, "expect": {}, "manifests": manifests, "feature_gates": "NodeOverlay=true"}
    )
    broken = KubeEnforcement(rbac_paths=(without_overlay_status(tmp_path), DEFAULT_RBAC[1]))
    summary = Simulation(scenario, kube_enforcement=broken).run().summary
    denied = [d for d in summary["rbac_first_denials"] if d["user"] == FUNCTIONS.name]
    assert denied and denied[0]["verb"] == "update" and denied[0]["resource"].startswith("nodeoverlays")
    assert summary["function_errors"] == 0  # a status the pass cannot write is reported, not a failed pass
