"""What a new user hits first: --version, kubectl's words for a missing path, CRDs to stdout, validate over a
GitOps folder, -f and operands alike, a closed pipe, the flag a missing value needs, "did you mean"."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import autoscaler
from autoscaler.cli import build_parser, main
from autoscaler.commands.manifest_args import manifest_paths

MANIFESTS = Path(__file__).parents[2] / "events" / "manifests"

# Every command that reads manifests, with the arguments it needs besides them.
READERS = {
    "validate": [],
    "get": [],
    "convert": [],
    "migrate-check": [],
    "userdata": ["--cluster-name", "c", "--endpoint", "https://e"],
    "plan": ["--embedded"],
}


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"autoscaler {autoscaler.__version__} (Karpenter v1.14.1's API)"


@pytest.mark.parametrize("command", list(READERS))
@pytest.mark.parametrize("spelling", ["operand", "-f"])
def test_a_missing_path_is_refused_as_kubectl_refuses_it(
    command: str, spelling: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = str(tmp_path / "missing.yaml")
    given = [missing] if spelling == "operand" and command not in ("plan",) else ["-f", missing]
    assert main([command, *READERS[command], str(MANIFESTS / "spot.yaml"), *given]) == 1
    captured = capsys.readouterr()
    assert captured.err.strip() == f'error: the path "{missing}" does not exist'
    assert captured.out == ""


@pytest.mark.parametrize("command", list(READERS))
def test_operands_and_the_filename_option_mean_the_same(command: str) -> None:
    args = build_parser().parse_args([command, *READERS[command], "a.yaml", "-f", "b.yaml", "dir/", "--filename", "c"])
    assert sorted([*args.paths, *args.files]) == ["a.yaml", "b.yaml", "c", "dir/"]


def test_validate_without_manifests_names_both_spellings(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["validate"])
    assert "the following arguments are required: -f/--filename (or PATH operands)" in capsys.readouterr().err


def test_validate_reads_a_folder_given_with_f(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "-f", str(MANIFESTS)]) == 0
    assert "0 invalid" in capsys.readouterr().out
    assert manifest_paths(build_parser().parse_args(["validate", "-f", str(MANIFESTS)])) == [str(MANIFESTS)]


def test_crds_go_to_stdout_without_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["crds"]) == 0
    crds = [d for d in yaml.safe_load_all(capsys.readouterr().out) if d]
    assert {c["metadata"]["name"] for c in crds} == {
        "nodepools.karpenter.sh",
        "nodeclaims.karpenter.sh",
        "ec2nodeclasses.karpenter.k8s.aws",
        "nodeoverlays.karpenter.sh",
        "capacitybuffers.autoscaling.x-k8s.io",
    }
    assert {c["kind"] for c in crds} == {"CustomResourceDefinition"}
    assert list(tmp_path.iterdir()) == []  # nothing written where the command ran


GITOPS = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec: {}
---
apiVersion: v1
kind: Service
metadata: {name: web}
---
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [spot.yaml]
---
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: platform}
"""


def test_validate_skips_kubernetes_kinds_and_warns_on_unknown_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "spot.yaml").write_text((MANIFESTS / "spot.yaml").read_text())
    (tmp_path / "app.yaml").write_text(GITOPS)
    assert main(["validate", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "Deployment" not in out and "registered" not in out
    assert "WARNING  Application/platform" in out and "argoproj.io/v1alpha1 Application is not a kind we know" in out
    assert out.strip().splitlines()[-1] == (
        "2 objects, 2 valid (0 with warnings), 0 invalid; "
        "not validated: 3 Kubernetes objects skipped, 1 of unknown kinds"
    )


def test_validate_still_refuses_an_unserved_version_of_karpenters_kinds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "old.yaml").write_text("apiVersion: karpenter.sh/v1beta1\nkind: NodePool\nmetadata: {name: old}\n")
    assert main(["validate", str(tmp_path)]) == 1
    assert 'no kind "NodePool" is registered for version "karpenter.sh/v1beta1"' in capsys.readouterr().out


def test_an_unknown_field_close_to_a_known_one_gets_a_suggestion(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pool = yaml.safe_load((MANIFESTS / "spot.yaml").read_text().split("---")[0])
    spec = pool["spec"]["template"]["spec"]
    spec["requirments"] = spec.pop("requirements")
    pool["spec"]["disruption"] = {"budgets": [{"node": "10%"}]}
    pool["spec"]["zzzz"] = 1
    (tmp_path / "pool.yaml").write_text(yaml.safe_dump(pool))
    assert main(["validate", str(tmp_path / "pool.yaml")]) == 1
    out = capsys.readouterr().out
    assert 'unknown field "spec.template.spec.requirments": did you mean "requirements"?' in out
    assert 'unknown field "spec.disruption.budgets[0].node": did you mean "nodes"?' in out
    assert 'unknown field "spec.zzzz"\n' in out  # nothing close: no guess


def test_validate_reports_every_failing_rule_of_an_object(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pool = yaml.safe_load((MANIFESTS / "spot.yaml").read_text().split("---")[0])
    pool["spec"] |= {"replicas": 2, "weight": 5, "limits": {"cpu": "10"}}  # two of a static NodePool's rules
    (tmp_path / "pool.yaml").write_text(yaml.safe_dump(pool))
    assert main(["validate", str(tmp_path / "pool.yaml"), "-o", "json"]) == 1
    (verdict,) = json.loads(capsys.readouterr().out)
    messages = [e["message"] for e in verdict["errors"] if e["path"] == "spec"]
    assert messages == [
        "Invalid value: \"object\": only 'limits.nodes' is supported on static NodePools",
        "Invalid value: \"object\": 'weight' is not supported on static NodePools",
    ]


def test_userdata_names_the_flag_a_family_needs(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["userdata", "-f", str(MANIFESTS / "general-purpose.yaml"), "--cluster-name", "c", "--endpoint", "https://e"]
    assert main(argv) == 1
    assert (
        capsys.readouterr()
        .err.strip()
        .endswith("service CIDR for its NodeConfig, and it is not known yet: pass --cidr")
    )


def test_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    """`autoscaler validate ... | head -1`: the reader goes after one line, with far more than a pipe's buffer
    still to write; no traceback, the exit status says it."""
    widgets = "".join(f"---\napiVersion: example.com/v1\nkind: Widget\nmetadata: {{name: w{i}}}\n" for i in range(1000))
    (tmp_path / "widgets.yaml").write_text(widgets)
    with subprocess.Popen(
        [sys.executable, "-m", "autoscaler.cli", "validate", str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as process:
        assert process.stdout is not None and process.stderr is not None
        process.stdout.readline()
        process.stdout.close()
        stderr = process.stderr.read().decode()
        process.wait(timeout=60)
    assert stderr == ""
    assert process.returncode == 1
