"""kubectl (the version on these machines) against the emulator through a generated kubeconfig."""

from __future__ import annotations

import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from autoscaler.manifests import load_documents
from autoscaler_dev.kube_emulator.emulator import KubeEmulator
from tests.support.kube import node, nodeclaim, pod

KUBECTL = shutil.which("kubectl")
MANIFESTS = Path(__file__).parents[3] / "events" / "manifests"
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed on this machine")


@pytest.fixture
def kubectl(kube: KubeEmulator, tmp_path: Path):  # type: ignore[no-untyped-def]
    config = kube.write_kubeconfig(tmp_path / "kubeconfig")

    def run(*args: str, timeout: float = 20) -> str:
        command = [str(KUBECTL), "--kubeconfig", str(config), "--cache-dir", str(tmp_path / "cache"), *args]
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
        assert result.returncode == 0, result.stderr
        return result.stdout

    return run


def _rows(output: str) -> list[list[str]]:
    return [line.split() for line in output.strip().splitlines()]


def test_discovery_lists_our_kinds(kubectl) -> None:  # type: ignore[no-untyped-def]
    resources = {row[0]: row for row in _rows(kubectl("api-resources"))[1:]}
    assert resources["nodeclaims"][-3:] == ["karpenter.sh/v1", "false", "NodeClaim"]
    assert resources["ec2nodeclasses"][1] == "ec2nc,ec2ncs"
    assert {"pods", "nodes", "leases", "poddisruptionbudgets", "nodepools"} <= set(resources)


def test_get_prints_the_crds_printer_columns(kube: KubeEmulator, kubectl) -> None:  # type: ignore[no-untyped-def]
    for document in load_documents([MANIFESTS]):
        kube.create(document.body)
    claim = nodeclaim("default-x7k2p", "general-purpose")
    claim["metadata"]["labels"].update(
        {
            "node.kubernetes.io/instance-type": "m5.large",
            "karpenter.sh/capacity-type": "spot",
            "topology.kubernetes.io/zone": "us-west-2a",
        }
    )
    claim["status"] = {
        "nodeName": "ip-10-0-1-5",
        "providerID": "aws:///us-west-2a/i-0abc",
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "reason": "Ready",
                "message": "",
                "lastTransitionTime": "2024-01-01T00:00:00Z",
            }
        ],
    }
    kube.create(claim)

    classes = _rows(kubectl("get", "ec2nodeclasses", "-o", "wide"))
    assert classes[0] == ["NAME", "READY", "AGE", "ROLE"]
    general = next(row for row in classes[1:] if row[0] == "general-purpose")
    assert general[-1] == "KarpenterNodeRole-demo"  # READY is empty until the nodeclass function reports
    claims = _rows(kubectl("get", "nodeclaims"))
    assert claims[0] == ["NAME", "TYPE", "CAPACITY", "ZONE", "NODE", "READY", "AGE"]
    assert claims[1][:6] == ["default-x7k2p", "m5.large", "spot", "us-west-2a", "ip-10-0-1-5", "True"]
    wide = _rows(kubectl("get", "nodeclaims", "-o", "wide"))
    assert wide[0][-5:] == ["IMAGEID", "ID", "NODEPOOL", "NODECLASS", "DRIFTED"]  # v1.14's wide columns
    # no imageID and no Drifted condition: those two cells are empty, the others as before
    assert len(wide[1]) == len(wide[0]) - 2
    assert wide[1][-3:] == ["aws:///us-west-2a/i-0abc", "general-purpose", "default"]
    assert _rows(kubectl("get", "nodepools"))[0] == ["NAME", "NODECLASS", "NODES", "READY", "AGE"]


def test_get_list_and_yaml_of_core_kinds(kube: KubeEmulator, kubectl) -> None:  # type: ignore[no-untyped-def]
    kube.create(node("ip-10-0-1-5"))
    kube.create(pod("web", node="ip-10-0-1-5"))
    assert _rows(kubectl("get", "nodes"))[1][:2] == ["ip-10-0-1-5", "Ready"]
    pods = _rows(kubectl("get", "pods", "-A", "-o", "wide"))
    assert pods[0][:3] == ["NAMESPACE", "NAME", "READY"] and pods[1][:2] == ["default", "web"]
    assert "ip-10-0-1-5" in pods[1]
    assert "nodeName: ip-10-0-1-5" in kubectl("get", "pod", "web", "-o", "yaml")


def test_watch_streams_changes_until_the_request_timeout(kube: KubeEmulator, kubectl) -> None:  # type: ignore[no-untyped-def]
    kube.create(pod("first"))
    threading.Timer(0.5, lambda: kube.create(pod("second"))).start()
    names = [row[0] for row in _rows(kubectl("get", "pods", "--watch", "--request-timeout=2s"))]
    assert names == ["NAME", "first", "second"]


def _static_nodepool(name: str, replicas: int | None) -> dict[str, object]:
    spec: dict[str, object] = {
        "template": {
            "spec": {
                "requirements": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}],
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
            }
        }
    }
    if replicas is not None:
        spec["replicas"] = replicas
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name}, "spec": spec}


def test_kubectl_scale_nodepool_writes_spec_replicas(kube: KubeEmulator, kubectl) -> None:  # type: ignore[no-untyped-def]
    kube.create(_static_nodepool("fixed", 2))
    assert "nodepool.karpenter.sh/fixed scaled" in kubectl("scale", "nodepool", "fixed", "--replicas", "5")
    stored = kube.get("karpenter.sh/v1", "NodePool", "fixed", "")
    assert stored is not None and stored["spec"]["replicas"] == 5
    raw = kubectl("get", "--raw", "/apis/karpenter.sh/v1/nodepools/fixed/scale")
    assert '"replicas":5' in raw.replace(" ", "")
    kubectl("scale", "nodepool", "fixed", "--replicas", "0", "--current-replicas", "5")
    stored = kube.get("karpenter.sh/v1", "NodePool", "fixed", "")
    assert stored is not None and stored["spec"]["replicas"] == 0


def test_kubectl_scale_cannot_make_a_dynamic_nodepool_static(kube: KubeEmulator, tmp_path: Path) -> None:
    kube.create(_static_nodepool("dynamic", None))
    config = kube.write_kubeconfig(tmp_path / "kubeconfig")
    command = [str(KUBECTL), "--kubeconfig", str(config), "scale", "nodepool", "dynamic", "--replicas", "3"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=20, check=False)
    assert result.returncode != 0
    assert "Cannot transition NodePool between static" in result.stderr
