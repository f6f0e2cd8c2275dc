"""The world's kubelet reports nodes and pods as a real one does: addresses, node info, pod conditions and
container statuses (what ``kubectl get -o wide`` and ``READY 1/1`` read)."""

from __future__ import annotations

from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler_dev.world import kubelet
from tests.support.kube import nodeclaim


def launched() -> NodeClaim:
    claim = nodeclaim("default-abc12", "default")
    claim["status"] = {"providerID": "aws:///us-west-2a/i-0abc", "capacity": {"cpu": "2"}, "allocatable": {"cpu": "2"}}
    return NodeClaim.model_validate(claim)


def test_a_node_reports_its_addresses_and_node_info() -> None:
    private = kubelet.node_for(launched(), now="2026-01-01T00:00:00Z")
    name = private["metadata"]["name"]
    addresses = {a["type"]: a["address"] for a in private["status"]["addresses"]}
    assert addresses["InternalIP"] == name.split(".")[0].removeprefix("ip-").replace("-", ".")
    assert addresses["Hostname"] == name and "ExternalIP" not in addresses
    ready = next(c for c in private["status"]["conditions"] if c["type"] == "Ready")
    assert ready["lastHeartbeatTime"] == "2026-01-01T00:00:00Z"
    assert private["status"]["nodeInfo"]["containerRuntimeVersion"].startswith("containerd://")
    public = kubelet.node_for(launched(), public_ip=True)
    assert any(a["type"] == "ExternalIP" for a in public["status"]["addresses"])


def test_a_started_pod_is_ready_with_every_container_running() -> None:
    pod = {
        "metadata": {"name": "web-1", "uid": "u1"},
        "spec": {"containers": [{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}]},
    }
    status = kubelet.pod_status(pod, "10.0.0.5", "2026-01-01T00:00:00Z")
    assert status["phase"] == "Running" and status["hostIP"] == "10.0.0.5" and status["podIP"].startswith("10.")
    assert {c["type"] for c in status["conditions"] if c["status"] == "True"} >= {
        "Ready",
        "ContainersReady",
        "Initialized",
        "PodScheduled",
    }
    assert [(c["name"], c["ready"], list(c["state"])) for c in status["containerStatuses"]] == [
        ("a", True, ["running"]),
        ("b", True, ["running"]),
    ]
