"""The SSM statements the functions get: the account's own parameters (ssmParameter AMI terms) are readable
with GetParameter in the cluster's region; without that statement the world denies the read."""

from __future__ import annotations

from typing import Any

from aws_cdk import App, Stack

from infra.constructs import permissions
from tests.unit.iam.test_enforcer import enforcer


def ssm_statements() -> list[dict[str, Any]]:
    stack = Stack(App(), "S", env={"account": "123456789012", "region": "us-west-2"})
    return [stack.resolve(s.to_statement_json()) for s in permissions._ssm(None)]  # type: ignore[arg-type]


def test_account_parameters_are_readable_and_denied_without_the_statement() -> None:
    read = {"Name": "/team/node-ami"}
    statements = ssm_statements()
    assert enforcer(statements).authorize("provisioner", "ssm", "GetParameter", read) is None
    public_only = [s for s in statements if s.get("Sid") != "ReadAccountAmiParameters"]
    denial = enforcer(public_only).authorize("provisioner", "ssm", "GetParameter", read)
    assert denial is not None and "ssm:GetParameter" in denial.missing
