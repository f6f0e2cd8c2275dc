"""`autoscaler userdata`: what a node of a class would boot with, offline."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
import yaml

from autoscaler.cli import main

MANIFESTS = Path(__file__).parents[2] / "events" / "manifests"
CLUSTER = [
    "--cluster-name",
    "demo",
    "--endpoint",
    "https://ABC.eks.amazonaws.com",
    "--ca",
    base64.b64encode(b"ca").decode(),
]


@pytest.mark.parametrize(
    ("manifest", "marker", "family"),
    [
        ("general-purpose.yaml", "# Karpenter Generated NodeConfig", None),
        ("bottlerocket.yaml", 'cluster-name = "demo"', "Bottlerocket"),
        ("windows-2022.yaml", "Start-EKSBootstrap.ps1", "Windows2022"),
        ("al2023-custom-userdata.yaml", "vm.max_map_count", "AL2023"),
    ],
)
def test_prints_user_data_per_family(
    manifest: str, marker: str, family: str | None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["userdata", "-f", str(MANIFESTS / manifest), *CLUSTER, "--cidr", "10.100.0.0/16", "-o", "json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert marker in result["userData"]
    assert family is None or result["family"] == family
    data = result["launchTemplateData"]
    assert data["MetadataOptions"]["HttpTokens"] == "required"
    assert result["launchTemplateName"].startswith("karpenter.k8s.aws/")


def test_nodepool_labels_and_taints_reach_the_user_data(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["userdata", "-f", str(MANIFESTS / "windows-2022.yaml"), *CLUSTER]) == 0
    out = capsys.readouterr().out
    assert "karpenter.sh/nodepool=windows2022" in out and "karpenter.sh/unregistered:NoExecute" in out


def test_al2023_without_a_cidr_says_what_is_missing(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["userdata", "-f", str(MANIFESTS / "al2023-custom-userdata.yaml"), *CLUSTER]) == 1
    assert "service CIDR" in capsys.readouterr().err


def test_several_classes_need_a_choice(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit, match="expected exactly one EC2NodeClass"):
        main(["userdata", "-f", str(MANIFESTS), *CLUSTER])


def test_without_a_nodepool_its_name_is_a_placeholder_where_a_launch_puts_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nodeclass = next(
        d
        for d in yaml.safe_load_all((MANIFESTS / "general-purpose.yaml").read_text())
        if d and d["kind"] == "EC2NodeClass"
    )
    (tmp_path / "class.yaml").write_text(yaml.safe_dump(nodeclass))
    assert (
        main(["userdata", "-f", str(tmp_path / "class.yaml"), *CLUSTER, "--cidr", "10.100.0.0/16", "-o", "json"]) == 0
    )
    result = json.loads(capsys.readouterr().out)
    assert "karpenter.sh/nodepool=<nodepool>" in result["userData"]  # a launched node's labels carry its pool
    tags = result["launchTemplateData"]["TagSpecifications"][0]["Tags"]
    assert {"Key": "karpenter.sh/nodepool", "Value": "<nodepool>"} in tags
