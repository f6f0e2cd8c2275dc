"""The GitOps overlay example renders with kubectl's kustomize: the forwarder's image and settings replaced,
everything else the tracked base's."""

from __future__ import annotations

import shutil
import subprocess
from typing import Any

import pytest
import yaml

from tests.infra.conftest import REPO_ROOT

KUBECTL = shutil.which("kubectl")
OVERLAY = REPO_ROOT / "infra" / "manifests" / "overlays" / "example"


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed on this machine")
def test_the_overlay_sets_image_bus_cluster_and_region_on_the_base() -> None:
    result = subprocess.run(
        [str(KUBECTL), "kustomize", str(OVERLAY)], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    objects: list[dict[str, Any]] = [d for d in yaml.safe_load_all(result.stdout) if d]
    assert sorted(o["kind"] for o in objects) == sorted(
        [
            "ServiceAccount",
            "ClusterRole",
            "ClusterRoleBinding",
            "Role",
            "RoleBinding",
            "Deployment",
            "PodDisruptionBudget",
        ]
    )
    (deployment,) = [o for o in objects if o["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"].startswith("111122223333.dkr.ecr.us-west-2.amazonaws.com/")
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert (env["EVENT_BUS_NAME"], env["CLUSTER_NAME"], env["AWS_REGION"]) == (
        "serverless-karpenter-my-cluster",
        "my-cluster",
        "us-west-2",
    )
    assert {"POD_NAME", "POD_NAMESPACE"} <= set(env)  # merged by name, the base's entries kept
