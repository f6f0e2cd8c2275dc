"""The SSM statements the functions get: AWS's public parameters (the EKS-optimized AMIs) are readable; the
account's own (an ssmParameter AMI term naming one) are not, as in Karpenter's default policy, until the user
grants their path."""

from __future__ import annotations

from typing import Any

from aws_cdk import App, Stack

from infra.constructs import permissions
from tests.unit.iam.test_enforcer import enforcer


def ssm_statements() -> list[dict[str, Any]]:
    stack = Stack(App(), "S", env={"account": "123456789012", "region": "us-west-2"})
    return [stack.resolve(s.to_statement_json()) for s in permissions._ssm(None)]  # type: ignore[arg-type]


def test_public_parameters_are_readable_and_the_accounts_own_are_denied_until_granted() -> None:
    public = {"Name": "/aws/service/eks/optimized-ami/1.30/amazon-linux-2023/x86_64/standard/recommended/image_id"}
    own = {"Name": "/team/node-ami"}
    statements = ssm_statements()
    assert enforcer(statements).authorize("provisioner", "ssm", "GetParameter", public) is None
    denial = enforcer(statements).authorize("provisioner", "ssm", "GetParameter", own)
    assert denial is not None and "ssm:GetParameter" in denial.missing
    granted = {
        "Effect": "Allow",
        "Action": "ssm:GetParameter",
        "Resource": "arn:aws:ssm:us-west-2:123456789012:parameter/team/*",
    }
    assert enforcer([*statements, granted]).authorize("provisioner", "ssm", "GetParameter", own) is None
