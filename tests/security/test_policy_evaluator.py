"""The evaluator's own semantics, on hand-written statements: the role tests are only as good as these."""

from __future__ import annotations

from typing import Any

import pytest

from autoscaler_dev.iam.policy import (
    ALLOW,
    EXPLICIT_DENY,
    IMPLICIT_DENY,
    PolicyError,
    Request,
    Resolver,
    arn_match,
    condition_holds,
    decide,
)

INSTANCE = "arn:aws:ec2:us-west-2:111122223333:instance/i-0abc"


def allow(**statement: Any) -> dict[str, Any]:
    return {"Effect": "Allow", **statement}


def test_actions_are_case_insensitive_wildcards_and_not_action_inverts() -> None:
    request = Request("EC2:terminateinstances", INSTANCE)
    assert decide([allow(Action="ec2:Terminate*", Resource="*")], request) == ALLOW
    assert decide([allow(Action="ec2:Run*", Resource="*")], request) == IMPLICIT_DENY
    assert decide([allow(NotAction="ec2:Terminate?nstances", Resource="*")], request) == IMPLICIT_DENY
    assert decide([allow(NotAction="iam:*", Resource="*")], request) == ALLOW


def test_explicit_deny_wins_over_allow() -> None:
    statements = [allow(Action="*", Resource="*"), {"Effect": "Deny", "Action": "ec2:*", "NotResource": "arn:*:s3:::*"}]
    assert decide(statements, Request("ec2:RunInstances", INSTANCE)) == EXPLICIT_DENY
    assert decide(statements, Request("s3:GetObject", "arn:aws:s3:::bucket/key")) == ALLOW


def test_arn_wildcards_stay_within_their_segment() -> None:
    assert arn_match("arn:aws:ec2:us-west-2:*:instance/*", INSTANCE)
    assert not arn_match("arn:aws:ec2:eu-west-1:*:instance/*", INSTANCE)
    with pytest.raises(PolicyError):  # a pattern of fewer than six parts is a mistake, not a wildcard
        arn_match("arn:aws:ec2:*:instance/*", INSTANCE)
    assert not arn_match("arn:aws:ec2:us-west-2:*:instance/*", "*")  # unscoped requests need Resource "*"
    assert arn_match("arn:aws:logs:r:a:log-group:g:*", "arn:aws:logs:r:a:log-group:g:log-stream:s")
    assert not arn_match("arn:aws:ec2:us-west-2:*:INSTANCE/*", INSTANCE)  # ARNs are case-sensitive


@pytest.mark.parametrize(
    ("operator", "policy", "context", "holds"),
    [
        ("StringEquals", "owned", {"aws:ResourceTag/k": "owned"}, True),
        ("StringEquals", "owned", {"AWS:resourcetag/K": "owned"}, True),  # keys are case-insensitive
        ("StringEquals", "owned", {"aws:ResourceTag/k": "Owned"}, False),  # values are not
        ("StringEquals", ["a", "b"], {"aws:ResourceTag/k": "b"}, True),  # values are ORed
        ("StringEquals", "owned", {}, False),  # a missing key never equals
        ("StringEqualsIfExists", "owned", {}, True),
        ("StringEqualsIfExists", "owned", {"aws:ResourceTag/k": "other"}, False),
        ("StringNotEquals", "owned", {}, True),  # a negated operator is satisfied by a missing key
        ("StringNotEquals", "owned", {"aws:ResourceTag/k": "owned"}, False),
        ("StringLike", "*", {"aws:ResourceTag/k": ""}, True),
        ("StringLike", "*", {}, False),  # `StringLike *` means: the tag is present
        ("StringLike", "i-?bc", {"aws:ResourceTag/k": "i-0bc"}, True),
        ("StringEqualsIgnoreCase", "OWNED", {"aws:ResourceTag/k": "owned"}, True),
        ("ArnLike", "arn:aws:iam::*:role/node-*", {"aws:ResourceTag/k": "arn:aws:iam::1:role/node-a"}, True),
        ("ArnEquals", "arn:aws:iam::1:role/x", {"aws:ResourceTag/k": "not-an-arn"}, False),
        ("Bool", "true", {"aws:ResourceTag/k": True}, True),
        ("Bool", "false", {"aws:ResourceTag/k": True}, False),
        ("Null", "true", {}, True),
        ("Null", "false", {}, False),
        ("Null", "false", {"aws:ResourceTag/k": "x"}, True),
        ("ForAllValues:StringEquals", ["Name", "x"], {"aws:ResourceTag/k": ["Name"]}, True),
        ("ForAllValues:StringEquals", ["Name"], {"aws:ResourceTag/k": ["Name", "evil"]}, False),
        ("ForAllValues:StringEquals", ["Name"], {}, True),  # vacuously true without the key, as in IAM
        ("ForAnyValue:StringEquals", ["Name"], {}, False),
        ("ForAnyValue:StringLike", ["karpenter.*"], {"aws:ResourceTag/k": ["x", "karpenter.sh/a"]}, True),
    ],
)
def test_condition_operators(operator: str, policy: Any, context: dict[str, Any], holds: bool) -> None:
    assert condition_holds(operator, "aws:ResourceTag/k", policy, context) is holds


@pytest.mark.parametrize(
    ("operator", "context"),
    [
        ("NumericLessThan", {}),
        ("DateGreaterThan", {}),
        ("ForAllValues:StringEqualsIfExists", {}),
        ("Maybe:StringEquals", {}),
        ("StringEquals", {"aws:ResourceTag/k": ["a", "b"]}),  # multi-valued key, single-valued operator
    ],
)
def test_what_is_not_modelled_raises(operator: str, context: dict[str, Any]) -> None:
    with pytest.raises(PolicyError):
        condition_holds(operator, "aws:ResourceTag/k", "a", context)


def test_an_unmodelled_operator_raises_even_when_another_condition_already_fails() -> None:
    statement = allow(
        Action="*", Resource="*", Condition={"StringEquals": {"a:b": "c"}, "NumericLessThan": {"a:n": "1"}}
    )
    with pytest.raises(PolicyError, match="NumericLessThan"):
        decide([statement], Request("ec2:RunInstances", INSTANCE))


def test_intrinsics_resolve_to_concrete_strings_and_unknown_ones_raise() -> None:
    template = {
        "Resources": {
            "Queue": {"Type": "AWS::SQS::Queue", "Properties": {}},
            "Role": {"Type": "AWS::IAM::Role", "Properties": {"RoleName": "node"}},
        }
    }
    resolver = Resolver(template)
    joined = {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, ":ec2:", {"Ref": "AWS::Region"}, ":*:x/*"]]}
    assert resolver.resolve(joined) == "arn:aws:ec2:us-west-2:*:x/*"
    assert resolver.resolve({"Fn::GetAtt": ["Queue", "Arn"]}) == "arn:aws:sqs:us-west-2:111122223333:Queue"
    assert resolver.resolve({"Fn::GetAtt": ["Role", "Arn"]}) == "arn:aws:iam::111122223333:role/node"
    for unknown in ({"Fn::Sub": "x"}, {"Fn::GetAtt": ["Queue", "QueueUrl"]}, {"Ref": "Missing"}, "${aws:username}"):
        with pytest.raises(PolicyError):
            resolver.resolve(unknown)
