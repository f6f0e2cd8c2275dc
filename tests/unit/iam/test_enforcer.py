"""The enforcer over a template: each function's own role decides, denials say which statement was missing, and
what cannot be judged is denied. Also how the template's resources are bound to the world's names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from autoscaler_dev.iam.enforcer import IamEnforcer
from autoscaler_dev.iam.template import StackRoles, inputs_digest, world_names
from tests.unit.iam.test_calls import ENV, Inventory, fleet


def template(provisioner_statements: list[dict[str, Any]]) -> dict[str, Any]:
    def function(name: str, role: str) -> dict[str, Any]:
        return {
            "Type": "AWS::Lambda::Function",
            "Properties": {
                "Handler": f"{name}/handler.handler",
                "Role": {"Fn::GetAtt": [role, "Arn"]},
                "Environment": {"Variables": {"STATE_TABLE_NAME": {"Ref": "Table"}, "LOG_LEVEL": "INFO"}},
            },
        }

    return {
        "Resources": {
            "Table": {"Type": "AWS::DynamoDB::Table", "Properties": {}},
            "Queue": {"Type": "AWS::SQS::Queue", "Properties": {}},
            "ProvisionerRole": {"Type": "AWS::IAM::Role", "Properties": {}},
            "TerminationRole": {"Type": "AWS::IAM::Role", "Properties": {}},
            "Provisioner": function("provisioner", "ProvisionerRole"),
            "Termination": function("termination", "TerminationRole"),
            "Live": {"Type": "AWS::Lambda::Alias", "Properties": {"FunctionName": {"Ref": "Provisioner"}}},
            "Mapping": {
                "Type": "AWS::Lambda::EventSourceMapping",
                "Properties": {"FunctionName": {"Ref": "Live"}, "EventSourceArn": {"Fn::GetAtt": ["Queue", "Arn"]}},
            },
            "ProvisionerPolicy": {
                "Type": "AWS::IAM::Policy",
                "Properties": {
                    "Roles": [{"Ref": "ProvisionerRole"}],
                    "PolicyDocument": {"Statement": provisioner_statements},
                },
            },
        }
    }


TABLE_READS = {
    "Sid": "Table",
    "Effect": "Allow",
    "Action": "dynamodb:GetItem",
    "Resource": {"Fn::GetAtt": ["Table", "Arn"]},
}
TAGGED_LAUNCHES = {
    "Sid": "Launch",
    "Effect": "Allow",
    "Action": ["ec2:CreateFleet", "ec2:RunInstances", "ec2:CreateTags"],
    "Resource": "*",
    "Condition": {"StringEqualsIfExists": {"aws:RequestTag/eks:eks-cluster-name": "world"}},
}
PASS = {"Sid": "Pass", "Effect": "Allow", "Action": "iam:PassRole", "Resource": "*"}


def enforcer(statements: list[dict[str, Any]]) -> IamEnforcer:
    stack = template(statements)
    names = world_names(stack, {"STATE_TABLE_NAME": "world-state"}, {"provisioner": "world-provisioning.fifo"})
    return IamEnforcer(StackRoles(stack, ENV, names), Inventory(), ENV)


def test_the_template_is_bound_to_the_worlds_names_through_environment_and_event_sources() -> None:
    stack = template([])
    names = world_names(stack, {"STATE_TABLE_NAME": "world-state"}, {"provisioner": "world-provisioning.fifo"})
    assert names == {"Table": "world-state", "Queue": "world-provisioning.fifo"}
    assert StackRoles(stack, ENV, names).role_ids == {
        "provisioner": "ProvisionerRole",
        "termination": "TerminationRole",
    }


def test_a_call_its_role_allows_passes_and_anothers_role_does_not_decide() -> None:
    gate = enforcer([TABLE_READS])
    assert gate.authorize("provisioner", "dynamodb", "GetItem", {"TableName": "world-state"}) is None
    denial = gate.authorize("termination", "dynamodb", "GetItem", {"TableName": "world-state"})
    assert denial is not None and denial.missing == "no statement allows dynamodb:GetItem"
    assert gate.denied == 1 and gate.denials == [denial]


def test_a_denial_names_the_statement_that_came_closest_and_what_it_did_not_match() -> None:
    gate = enforcer([TABLE_READS])
    denial = gate.authorize("provisioner", "dynamodb", "GetItem", {"TableName": "other-state"})
    assert denial is not None
    assert denial.resource == "arn:aws:dynamodb:us-west-2:123456789012:table/other-state"
    assert "Table (resource" in denial.missing


def test_a_fleet_needs_every_implied_action() -> None:
    assert (
        enforcer([TAGGED_LAUNCHES, PASS]).authorize(
            "provisioner",
            "ec2",
            "CreateFleet",
            fleet(),
        )
        is None
    )
    without_pass = enforcer([TAGGED_LAUNCHES]).authorize("provisioner", "ec2", "CreateFleet", fleet())
    assert without_pass is not None and without_pass.action == "iam:PassRole"
    other = fleet()
    other["TagSpecifications"][0]["Tags"] = [{"Key": "eks:eks-cluster-name", "Value": "someone-else"}]
    wrong_tags = enforcer([TAGGED_LAUNCHES, PASS]).authorize("provisioner", "ec2", "CreateFleet", other)
    assert wrong_tags is not None and "aws:RequestTag/eks:eks-cluster-name" in wrong_tags.missing
    assert wrong_tags.function == "provisioner" and wrong_tags.action == "ec2:CreateFleet"


def test_what_cannot_be_judged_is_denied_saying_so() -> None:
    gate = enforcer([{"Effect": "Allow", "Action": "*", "Resource": "*"}])
    denial = gate.authorize("provisioner", "ec2", "ModifyInstanceAttribute", {})
    assert denial is not None and "not modelled" in denial.missing
    unreadable = enforcer(
        [{"Effect": "Allow", "Action": "*", "Resource": "*", "Condition": {"NumericLessThan": {"a:b": "1"}}}]
    )
    denial = unreadable.authorize("provisioner", "dynamodb", "GetItem", {"TableName": "world-state"})
    assert denial is not None and "NumericLessThan" in denial.missing
    assert gate.authorize("conversion", "dynamodb", "GetItem", {"TableName": "world-state"}) is not None  # no role


def test_the_synth_cache_key_follows_infra_sources_and_context(tmp_path: Path) -> None:
    (tmp_path / "infra").mkdir()
    (tmp_path / "cdk.json").write_text("{}")
    source = tmp_path / "infra" / "permissions.py"
    source.write_text("A = 1\n")
    first = inputs_digest({"clusterName": "world"}, tmp_path)
    assert inputs_digest({"clusterName": "world"}, tmp_path) == first
    assert inputs_digest({"clusterName": "other"}, tmp_path) != first
    source.write_text("A = 2\n")
    assert inputs_digest({"clusterName": "world"}, tmp_path) != first
