"""The `autoscaler` command: validate and get, as a user runs them."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from autoscaler.cli import build_parser, main
from autoscaler.crds.columns import evaluate, human_duration

MANIFESTS = Path(__file__).parents[2] / "events" / "manifests"

INVALID = """\
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: broken}
spec:
  amiFamily: Ubuntu
  amiSelectorTerms: [{id: ami-0abc}]
  subnetSelectorTerms: []
  securityGroupSelectorTerms: [{name: web}]
  role: r
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: fine}
spec:
  template:
    spec:
      requirements: [{key: kubernetes.io/os, operator: In, values: [linux]}]
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: broken}
---
not: [valid
"""


def test_validate_accepts_the_sample_manifests(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(MANIFESTS)]) == 0
    assert "0 invalid" in capsys.readouterr().out


def test_validate_reports_every_error_with_path_and_rule(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "objects.yaml"
    path.write_text(INVALID.split("---\nnot:", maxsplit=1)[0])
    assert main(["validate", str(path), "-o", "json"]) == 1
    verdicts = json.loads(capsys.readouterr().out)
    assert [(v["kind"], v["name"], v["valid"]) for v in verdicts] == [
        ("EC2NodeClass", "broken", False),
        ("NodePool", "fine", True),
    ]
    errors = {(e["path"], e["rule"]) for e in verdicts[0]["errors"]}
    assert ("spec.subnetSelectorTerms", "self.size() != 0") in errors
    assert ("spec.amiFamily", "enum") in errors


def test_validate_text_output_and_unparseable_yaml(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "objects.yaml"
    path.write_text(INVALID)
    assert main(["validate", str(path)]) == 1
    out = capsys.readouterr().out
    assert 'The EC2NodeClass "broken" is invalid:' in out
    assert 'spec.subnetSelectorTerms: Invalid value: "array": subnetSelectorTerms cannot be empty' in out
    assert "cannot read manifest" in out


def test_get_prints_kubectl_columns(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["get", str(MANIFESTS / "spot.yaml"), "-o", "wide"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split() == ["NAME", "READY", "AGE", "ROLE"]
    assert lines[2].split() == ["spot", "<unknown>", "KarpenterNodeRole-demo"]
    assert lines[5].split() == ["NAME", "NODECLASS", "NODES", "READY", "AGE", "WEIGHT", "CPU", "MEMORY"]


def test_printer_column_json_paths() -> None:
    obj = {
        "metadata": {"labels": {"node.kubernetes.io/instance-type": "m5.large"}},
        "status": {"conditions": [{"type": "Launched", "status": "True"}, {"type": "Ready", "status": "False"}]},
    }
    assert evaluate(obj, '.status.conditions[?(@.type=="Ready")].status') == "False"
    assert evaluate(obj, ".metadata.labels.node\\.kubernetes\\.io/instance-type") == "m5.large"
    assert evaluate(obj, ".spec.role") is None
    # several matches: the first, as the API server's table printer (CapacityBuffer's ConditionsType column)
    assert evaluate(obj, ".status.conditions[*].type") == "Launched"
    assert evaluate({"status": {"conditions": []}}, ".status.conditions[*].type") is None


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (45, "45s"),
        (200, "3m20s"),
        (1500, "25m"),
        (5 * 3600 + 600, "5h10m"),
        (30 * 3600, "30h"),
        (3 * 86400 + 4 * 3600, "3d4h"),
        (120 * 86400, "120d"),
        (800 * 86400, "2y"),
    ],
)
def test_ages_read_like_kubectl(seconds: int, text: str) -> None:
    now = datetime(2026, 11, 30, tzinfo=UTC)
    assert human_duration(now - (now - timedelta(seconds=seconds))) == text


RUNTIME_INVALID = """\
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: odd-labels}
spec:
  replicas: 2
  template:
    metadata:
      labels: {"bad key": x, karpenter.k8s.aws/ec2nodeclass: default}
    spec:
      requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [preemptible]}]
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
"""


def test_validate_warns_of_runtime_validation_apart_from_rejection(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "nodepool.yaml"
    path.write_text(RUNTIME_INVALID)
    assert main(["validate", str(path)]) == 0  # the API server admits it: not a failure of the command
    out = capsys.readouterr().out
    assert "WARNING  NodePool/odd-labels" in out and "INVALID" not in out
    assert "runtime validation fails (ValidationSucceeded=False: the NodePool is not Ready)" in out
    assert 'labels: key "bad key" is not a qualified name' in out
    assert 'label "karpenter.k8s.aws/ec2nodeclass" is in a domain Karpenter reserves' in out
    assert 'key "karpenter.sh/capacity-type" can only be one of on-demand, reserved, spot' in out
    assert "spec.replicas: ignored while the StaticCapacity feature gate is off" in out
    assert "1 objects, 1 valid (1 with warnings), 0 invalid" in out

    assert main(["validate", str(path), "-o", "json", "--feature-gates", "StaticCapacity=true"]) == 0
    (verdict,) = json.loads(capsys.readouterr().out)
    assert verdict["valid"] is True and verdict["errors"] == [] and verdict["ignored"] == []
    assert {w["rule"] for w in verdict["warnings"]} == {"runtime validation"}
    assert len(verdict["warnings"]) == 3

    assert main(["validate", str(path), "--feature-gates", "StaticCapacity=yes"]) == 2
    assert "must be Name=true or Name=false" in capsys.readouterr().out


def test_get_lists_overlays_and_buffers_with_their_columns(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["get", str(MANIFESTS / "node-overlay.yaml"), str(MANIFESTS / "capacity-buffer.yaml"), "-o", "wide"]) == 0
    )
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "# nodeoverlays.karpenter.sh"
    assert lines[1].split() == ["NAME", "READY", "AGE", "WEIGHT"]
    assert lines[2].split() == ["m7i-savings-plan", "<unknown>", "10"]
    assert lines[4] == "# capacitybuffers.autoscaling.x-k8s.io"
    assert lines[5].split()[1:4] == ["STRATEGY", "PODTEMPLATE", "REPLICAS"]
    assert lines[6].split() == ["web-headroom", "buffer.x-k8s.io/active-capacity", "<unknown>"]  # the CRD default


# The arguments each manifest-reading command needs besides its manifests.
OTHER_ARGUMENTS = {
    "convert": [],
    "migrate-check": [],
    "userdata": ["--cluster-name", "c", "--endpoint", "https://e"],
    "plan": ["--embedded"],
    "invoke": ["provisioner", "event.json"],
}


@pytest.mark.parametrize("command", list(OTHER_ARGUMENTS))
def test_every_command_reads_manifests_from_the_same_filename_option(command: str) -> None:
    argv = [command, *OTHER_ARGUMENTS[command], "-f", "a.yaml", "-f", "b.yaml", "dir/", "--filename", "c"]
    assert build_parser().parse_args(argv).files == ["a.yaml", "b.yaml", "dir/", "c"]


@pytest.mark.parametrize("command", ["plan", "invoke"])
def test_the_filename_option_may_be_left_out_where_manifests_are_optional(command: str) -> None:
    assert build_parser().parse_args([command, *OTHER_ARGUMENTS[command]]).files == []


@pytest.mark.parametrize("command", ["convert", "migrate-check", "userdata"])
def test_the_filename_option_is_required_where_manifests_are_the_input(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args([command, *OTHER_ARGUMENTS[command]])
    assert "the following arguments are required: -f/--filename" in capsys.readouterr().err
