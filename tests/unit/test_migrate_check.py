"""`autoscaler migrate-check`: the pre-upgrade checklist, a finding per object that needs a decision, exit 1
when anything does, 0 when nothing does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from autoscaler.apis.v1 import labels as wk
from autoscaler.cli import main

ROOT = Path(__file__).parents[2]
EXAMPLES = ROOT / "events" / "v1beta1"
V1_MANIFESTS = ROOT / "events" / "manifests"

POLICY = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Sid": "AllowScopedEC2InstanceActions",
            "Effect": "Allow",
            "Action": ["ec2:RunInstances", "ec2:CreateFleet"],
            "Resource": "*",
            "Condition": {"StringEquals": {"aws:RequestTag/kubernetes.io/cluster/demo": "owned"}},
        },
        {
            "Effect": "Allow",
            "Action": "ec2:TerminateInstances",
            "Resource": "*",
            "Condition": {"StringLike": {"ec2:ResourceTag/karpenter.sh/managed-by": "demo"}},
        },
        {
            "Sid": "AllowTagging",
            "Effect": "Allow",
            "Action": "ec2:CreateTags",
            "Resource": "*",
            "Condition": {"ForAllValues:StringEquals": {"aws:TagKeys": ["karpenter.sh/managed-by", "Name"]}},
        },
    ],
}


def check(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code = main(["migrate-check", *args, "-o", "json"])
    report = json.loads(capsys.readouterr().out)
    return code, {item["id"]: item for item in report["items"]}


def subjects(item: dict[str, Any]) -> set[str]:
    return {f["subject"] for f in item["findings"]}


def test_the_v1beta1_examples_need_attention(capsys: pytest.CaptureFixture[str]) -> None:
    code, items = check(capsys, "-f", str(EXAMPLES))
    assert code == 1
    assert items["converts"]["status"] == "ok"
    assert subjects(items["ami-auto-upgrade"]) == {
        "EC2NodeClass/general-purpose",
        "EC2NodeClass/al2023-extra-config",
        "EC2NodeClass/bottlerocket",
        "EC2NodeClass/windows2022",
        "EC2NodeClass/multiple-ebs",
    }
    # windows2022 writes its hop limit; every other v1beta1 class relied on the default 2
    assert "EC2NodeClass/windows2022" not in subjects(items["imds-hop-limit"])
    assert "EC2NodeClass/general-purpose" in subjects(items["imds-hop-limit"])
    assert "EC2NodeClass/pinned-ami" not in subjects(items["public-ip"])  # it says associatePublicIPAddress: false
    assert "EC2NodeClass/general-purpose" in subjects(items["public-ip"])
    assert subjects(items["ubuntu"]) == {"EC2NodeClass/ubuntu-pinned", "EC2NodeClass/ubuntu-discovered"}
    assert items["custom-ami-taint"]["status"] == "ok"  # fully-custom registers with the taint
    assert subjects(items["kubelet"]) == {"EC2NodeClass/ubuntu-pinned", "EC2NodeClass/ubuntu-discovered"}
    for skipped, flag in (
        ("iam-managed-by", "--iam-policy"),
        ("topology-spread", "--helm-values"),
        ("do-not-disrupt", "-f"),
    ):
        assert items[skipped]["status"] == "skipped" and flag in items[skipped]["skipped"]


def test_nodepools_sharing_a_class_with_different_kubelets(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pools = [yaml.safe_load(d) for d in (EXAMPLES / "ubuntu-kubelet.yaml").read_text().split("---")[:2]]
    pools[1]["spec"]["template"]["spec"]["nodeClassRef"] = {"name": "ubuntu-pinned"}
    (tmp_path / "pools.yaml").write_text(yaml.safe_dump_all(pools))
    _, items = check(capsys, "-f", str(tmp_path))
    [finding] = items["kubelet"]["findings"]
    assert (
        "NodePool/ubuntu, NodePool/ubuntu-legacy share EC2NodeClass/ubuntu-pinned with different kubelet"
        in finding["message"]
    )


def test_iam_conditions_on_managed_by(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    policy = tmp_path / "karpenter-controller.json"
    policy.write_text(json.dumps({"PolicyVersion": {"Document": POLICY, "VersionId": "v3"}}))
    broken = tmp_path / "broken.json"
    broken.write_text("{ not: [json")
    _, items = check(capsys, "-f", str(V1_MANIFESTS), "--iam-policy", str(policy), "--iam-policy", str(broken))
    findings = items["iam-managed-by"]["findings"]
    assert [f["subject"] for f in findings[:2]] == [
        "statement PolicyVersion.Document.Statement[1]",
        "statement AllowTagging",
    ]
    assert "eks:eks-cluster-name" in findings[0]["message"]
    assert findings[2]["origin"] == str(broken) and "cannot read IAM policy" in findings[2]["message"]


@pytest.mark.parametrize(
    ("values", "spread", "drift"),
    [
        ({}, "attention", "ok"),  # relied on v0.37's chart default: ScheduleAnyway
        (
            {
                "topologySpreadConstraints": [
                    {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule"}
                ]
            },
            "ok",
            "ok",
        ),
        ({"topologySpreadConstraints": [], "settings": {"featureGates": {"drift": False}}}, "ok", "attention"),
    ],
)
def test_helm_values(
    values: dict[str, Any], spread: str, drift: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "values.yaml"
    path.write_text(yaml.safe_dump(values))
    _, items = check(capsys, "-f", str(V1_MANIFESTS), "--helm-values", str(path))
    assert (items["topology-spread"]["status"], items["drift-gate"]["status"]) == (spread, drift)


def test_feature_gates_of_the_helm_values_map_to_the_stacks_context(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gates = {"spotToSpotConsolidation": True, "reservedCapacity": True, "nodeRepair": False, "drift": True, "x": True}
    path = tmp_path / "values.yaml"
    path.write_text(yaml.safe_dump({"topologySpreadConstraints": [], "settings": {"featureGates": gates}}))
    _, items = check(capsys, "-f", str(V1_MANIFESTS), "--helm-values", str(path))
    messages = [f["message"] for f in items["feature-gates"]["findings"]]
    assert items["feature-gates"]["status"] == "attention"
    assert messages == [
        "settings.featureGates.spotToSpotConsolidation is true (the default is false): "
        "deploy with -c featureGates=SpotToSpotConsolidation=true to keep it",
        "settings.featureGates.x is not a feature gate of Karpenter v1.14.1: it has no effect",
    ]  # gates left at their defaults need nothing


def test_v1_manifests_with_pinned_amis_need_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifests = tmp_path / "v1.yaml"
    protected = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "db", "annotations": {wk.ANNOTATION_DO_NOT_DISRUPT: "true"}},
    }
    manifests.write_text((V1_MANIFESTS / "custom-ami-by-name.yaml").read_text() + "---\n" + yaml.safe_dump(protected))
    values = tmp_path / "values.yaml"
    values.write_text("topologySpreadConstraints: []\n")
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps({"Version": "2012-10-17", "Statement": [POLICY["Statement"][0]]}))
    code, items = check(capsys, "-f", str(manifests), "--iam-policy", str(policy), "--helm-values", str(values))
    assert {i: item["status"] for i, item in items.items() if item["status"] != "ok"} == {}
    assert code == 0
    assert main(["migrate-check", "-f", str(manifests), "--iam-policy", str(policy), "--helm-values", str(values)]) == 0
    assert "Nothing needs attention." in capsys.readouterr().out


def test_text_output_and_unreadable_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("apiVersion: karpenter.sh/v1beta1\nkind: NodePool\nmetadata: {name: x}\nspec: {}\n---\n: [\n")
    assert main(["migrate-check", "-f", str(broken)]) == 1
    out = capsys.readouterr().out
    assert "[ATTENTION] Every NodePool, NodeClaim and EC2NodeClass converts to a valid v1 object" in out
    assert "NodePool/x" in out and "spec.template: Required value" in out
    assert "cannot read manifest" in out
    assert "[SKIPPED]" in out and "items need attention." in out


def test_overlays_and_buffers_are_karpenter_objects_that_need_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = [str(V1_MANIFESTS / "node-overlay.yaml"), str(V1_MANIFESTS / "capacity-buffer.yaml")]
    assert main(["migrate-check", "-f", *files]) == 0
    out = capsys.readouterr().out
    assert "(2 Karpenter objects read)" in out and "Nothing needs attention." in out
    broken = yaml.safe_load((V1_MANIFESTS / "node-overlay.yaml").read_text())
    broken["spec"]["price"] = "1"  # with priceAdjustment: the API server refuses it
    path = tmp_path / "overlay.yaml"
    path.write_text(yaml.safe_dump(broken))
    code, items = check(capsys, "-f", str(path))
    assert code == 1
    messages = [f["message"] for item in items.values() for f in item["findings"]]
    assert any("cannot set both 'price' and 'priceAdjustment'" in m for m in messages)
