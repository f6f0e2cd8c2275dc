"""`autoscaler convert`: our v1beta1 examples of every kind convert, the results pass `autoscaler validate`,
and each object that needs a decision carries a warning saying which."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from autoscaler.apis.v1 import labels as wk
from autoscaler.cli import main
from autoscaler.manifests import load_documents

EXAMPLES = Path(__file__).parents[2] / "events" / "v1beta1"
KINDS_OF_EXAMPLE = (
    "custom-ami",
    "custom-userdata",
    "bottlerocket",
    "windows",
    "ubuntu-kubelet",
    "node-ttls",
    "min-values",
    "multiple-ebs",
    "general-purpose",
)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """Exit code, stdout with wrapped warning lines joined, stderr."""
    code = main(["convert", *args])
    captured = capsys.readouterr()
    return code, captured.out.replace("\n#     ", " "), captured.err


def test_the_examples_cover_every_kind() -> None:
    assert sorted(p.stem for p in EXAMPLES.glob("*.yaml")) == sorted(KINDS_OF_EXAMPLE)


@pytest.mark.parametrize("example", KINDS_OF_EXAMPLE)
def test_each_example_converts_and_validates(example: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "-f", str(EXAMPLES / f"{example}.yaml"))
    assert code == 0, err
    converted = tmp_path / "v1.yaml"
    converted.write_text(out)
    documents = load_documents([converted])
    assert len(documents) == len(load_documents([EXAMPLES / f"{example}.yaml"]))
    assert {d.body["apiVersion"] for d in documents} <= {wk.API_VERSION, wk.AWS_API_VERSION}
    assert main(["validate", str(converted)]) == 0
    assert "0 invalid" in capsys.readouterr().out


def test_warnings_say_what_to_decide(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "-f", str(EXAMPLES))
    assert code == 0
    blocks = {
        doc.split("kind: ")[1].split("\n")[0] + "/" + doc.split("  name: ")[1].split("\n")[0]: doc
        for doc in out.split("\n---\n")
    }
    assert "follow the alias al2023@latest" in blocks["EC2NodeClass/general-purpose"]
    assert "al2023@v20240807" in blocks["EC2NodeClass/general-purpose"]
    assert "Windows aliases can only follow latest" in blocks["EC2NodeClass/windows2022"]
    assert "follow the alias" not in blocks["EC2NodeClass/pinned-ami"]  # it selects its own AMIs
    assert "httpPutResponseHopLimit 2 is kept from v1beta1" in blocks["EC2NodeClass/pinned-ami"]
    assert "replace `id: ami-placeholder`" in blocks["EC2NodeClass/ubuntu-discovered"]
    assert "root volume (/dev/sda1, 20Gi gp3" in blocks["EC2NodeClass/ubuntu-pinned"]
    assert "ami-placeholder" not in blocks["EC2NodeClass/ubuntu-pinned"]
    assert "EC2NodeClass/ubuntu-pinned.spec.kubelet" in blocks["NodePool/ubuntu"]
    assert "WARNING" not in blocks["NodePool/short-lived"]
    # the NodeClaim took its NodePool's expireAfter from the same input
    assert yaml.safe_load(blocks["NodeClaim/short-lived-x7k2p"])["spec"]["expireAfter"] == "168h"


def test_other_objects_pass_through_with_annotation_warnings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workloads = tmp_path / "workloads.yaml"
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"template": {"metadata": {"annotations": {wk.ANNOTATION_DO_NOT_EVICT_V1BETA1: "true"}}}},
    }
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n", "annotations": {wk.ANNOTATION_DO_NOT_CONSOLIDATE_V1BETA1: "true"}},
    }
    workloads.write_text(yaml.safe_dump_all([deployment, node]))
    code, out, _ = run(capsys, "-f", str(workloads), "-o", "json")
    assert code == 0
    assert json.loads(out)["items"] == [deployment, node]  # unchanged
    code, out, _ = run(capsys, "-f", str(workloads))
    assert out.count(f'annotate with {wk.ANNOTATION_DO_NOT_DISRUPT}: "true" instead') == 2


def test_json_output_with_warnings_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "-f", str(EXAMPLES / "bottlerocket.yaml"), "-o", "json")
    assert code == 0
    listing = json.loads(out)
    assert [i["kind"] for i in listing["items"]] == ["NodePool", "EC2NodeClass"]
    assert "warning: EC2NodeClass/bottlerocket: AMIs now follow the alias bottlerocket@latest" in err


def test_objects_that_do_not_convert_are_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = yaml.safe_load((EXAMPLES / "custom-ami.yaml").read_text().split("---")[1])
    source["spec"]["tags"] = {"eks:eks-cluster-name": "demo"}
    broken = tmp_path / "broken.yaml"
    broken.write_text(yaml.safe_dump(source) + "---\nnot: [valid\n")
    code, out, err = run(capsys, "-f", str(broken))
    assert code == 1
    assert out == ""
    assert "cannot be represented in karpenter.k8s.aws/v1: spec.tags" in err
    assert "cannot read manifest" in err


def test_overlays_and_buffers_pass_through_validated(capsys: pytest.CaptureFixture[str]) -> None:
    manifests = Path(__file__).parents[2] / "events" / "manifests"
    code, out, err = run(
        capsys, "-f", str(manifests / "node-overlay.yaml"), "-f", str(manifests / "capacity-buffer.yaml")
    )
    assert code == 0, err
    kinds = [(d["apiVersion"], d["kind"]) for d in yaml.safe_load_all(out)]
    assert kinds == [("karpenter.sh/v1alpha1", "NodeOverlay"), ("autoscaling.x-k8s.io/v1beta1", "CapacityBuffer")]
    assert "0 converted from v1beta1, 0 with warnings, 0 errors" in err
