"""Workload manifests expanded into the pending pods their controllers would create."""

from __future__ import annotations

from typing import Any

import pytest

from autoscaler.kube.resources import is_pending_unschedulable
from autoscaler.workloads import WorkloadError, expand

TEMPLATE = {
    "metadata": {"labels": {"app": "web"}},
    "spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": "1"}}}]},
}


def workload(kind: str, **spec: Any) -> dict[str, Any]:
    api = "batch/v1" if kind == "Job" else "apps/v1"
    return {
        "apiVersion": api,
        "kind": kind,
        "metadata": {"name": "web", "namespace": "shop"},
        "spec": {"template": TEMPLATE, **spec},
    }


def test_a_deployment_becomes_its_replicas_owned_by_its_replicaset() -> None:
    pods = expand(workload("Deployment", replicas=3))
    assert len(pods) == 3 and len({p["metadata"]["name"] for p in pods}) == 3
    assert len({p["metadata"]["uid"] for p in pods}) == 3
    for pod in pods:
        assert pod["metadata"]["namespace"] == "shop" and pod["metadata"]["labels"]["app"] == "web"
        (owner,) = pod["metadata"]["ownerReferences"]
        assert owner["kind"] == "ReplicaSet" and owner["name"].startswith("web-") and owner["controller"]
        assert is_pending_unschedulable(pod)
    assert expand(workload("Deployment", replicas=3)) == pods  # stable names and UIDs


def test_statefulsets_jobs_and_replicasets() -> None:
    assert [p["metadata"]["name"] for p in expand(workload("StatefulSet", replicas=2))] == ["web-0", "web-1"]
    assert len(expand(workload("Job", parallelism=4, completions=2))) == 2
    assert len(expand(workload("Job"))) == 1
    assert expand(workload("ReplicaSet"))[0]["metadata"]["ownerReferences"][0]["name"] == "web"
    assert expand(workload("Deployment", replicas=0)) == []


def test_a_pod_is_made_pending() -> None:
    (pod,) = expand({"kind": "Pod", "metadata": {"name": "p"}, "spec": {"nodeName": "n", **TEMPLATE["spec"]}})
    assert is_pending_unschedulable(pod) and "nodeName" not in pod["spec"]
    assert pod["metadata"]["namespace"] == "default"


@pytest.mark.parametrize(
    ("manifest", "message"),
    [
        ({"kind": "Service", "metadata": {"name": "s"}}, "not a workload kind"),
        (workload("Deployment", replicas=-1), "non-negative integer"),
        (workload("Deployment", replicas="3"), "non-negative integer"),
        ({"kind": "Deployment", "metadata": {"name": "d"}, "spec": {}}, "spec.template with containers"),
        ({"kind": "Pod", "metadata": {"name": "p"}, "spec": {}}, "has no containers"),
    ],
)
def test_malformed_workloads_say_what_is_wrong(manifest: dict[str, Any], message: str) -> None:
    with pytest.raises(WorkloadError, match=message):
        expand(manifest)
