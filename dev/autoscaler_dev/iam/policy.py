"""A small IAM identity-policy evaluator over a synthesized CloudFormation template: what the security tests
check their matrix with, and what the embedded world's AWS call gate authorizes every function's call with.

No maintained PyPI package evaluates conditions offline (policyuniverse and parliament parse and lint; pmapper's
simulator is unmaintained since 2022), so this is written for what our policies use, and fails closed: any
construct it does not model (an unknown condition operator or intrinsic, a policy variable, a managed policy it
cannot read, a multi-valued key under a single-valued operator) raises ``PolicyError`` instead of deciding.

Semantics follow the IAM evaluation logic for one account without SCPs, boundaries or session policies: an
explicit Deny wins, then any Allow, else implicit deny. Every statement element, operator and key match is
case-handled as IAM does (actions and condition keys case-insensitive, values and ARNs case-sensitive).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

ContextValue = str | bool | Sequence[str]


class PolicyError(Exception):
    """The evaluator met something it does not model: the test must error, never guess."""


@dataclass(frozen=True)
class Environment:
    """The concrete values CloudFormation would substitute for the pseudo parameters."""

    account: str = "111122223333"
    region: str = "us-west-2"
    partition: str = "aws"


# --- resolving the template's intrinsics ------------------------------------------------------------------------

_ARN_FORMATS = {  # GetAtt Arn of the resource types our policies name, from the physical name property
    "AWS::IAM::Role": ("RoleName", "arn:{p}:iam::{a}:role/{n}"),
    "AWS::SQS::Queue": ("QueueName", "arn:{p}:sqs:{r}:{a}:{n}"),
    "AWS::DynamoDB::Table": ("TableName", "arn:{p}:dynamodb:{r}:{a}:table/{n}"),
    "AWS::Logs::LogGroup": ("LogGroupName", "arn:{p}:logs:{r}:{a}:log-group:{n}:*"),
    "AWS::Events::EventBus": ("Name", "arn:{p}:events:{r}:{a}:event-bus/{n}"),
    "AWS::Lambda::Function": ("FunctionName", "arn:{p}:lambda:{r}:{a}:function:{n}"),
}


@dataclass(frozen=True)
class Resolver:
    """``names`` gives the physical name of resources CloudFormation would name itself (logical id -> name), so
    the template's ARNs can be those of a world that created the resources under other names."""

    template: Mapping[str, Any]
    env: Environment = field(default_factory=Environment)
    names: Mapping[str, str] = field(default_factory=dict)

    def physical_name(self, logical_id: str) -> str:
        if logical_id in self.names:
            return self.names[logical_id]
        resource = self._resource(logical_id)
        name_property = _ARN_FORMATS.get(resource["Type"], ("", ""))[0]
        name = resource.get("Properties", {}).get(name_property)
        return str(self.resolve(name)) if name is not None else logical_id  # CloudFormation generates one

    def arn(self, logical_id: str) -> str:
        resource_type = self._resource(logical_id)["Type"]
        if resource_type not in _ARN_FORMATS:
            raise PolicyError(f"no ARN format for {resource_type} ({logical_id})")
        pattern = _ARN_FORMATS[resource_type][1]
        env = self.env
        return pattern.format(p=env.partition, r=env.region, a=env.account, n=self.physical_name(logical_id))

    def _resource(self, logical_id: str) -> Mapping[str, Any]:
        try:
            return self.template["Resources"][logical_id]  # type: ignore[no-any-return]
        except KeyError:
            raise PolicyError(f"reference to a resource not in the template: {logical_id}") from None

    def resolve(self, value: Any) -> Any:
        """The value with every Ref / Fn::GetAtt Arn / Fn::Join replaced by its concrete string."""
        if isinstance(value, str):
            if "${" in value:
                raise PolicyError(f"policy variables are not modelled: {value!r}")
            return value
        if isinstance(value, bool | int | float) or value is None:
            return value
        if isinstance(value, list):
            return [self.resolve(item) for item in value]
        if not isinstance(value, dict):
            raise PolicyError(f"unexpected value {value!r}")
        intrinsics = [key for key in value if key == "Ref" or key.startswith("Fn::")]
        if not intrinsics:
            return {key: self.resolve(item) for key, item in value.items()}
        if len(value) != 1:
            raise PolicyError(f"malformed intrinsic {value!r}")
        if "Ref" in value:
            return self._ref(value["Ref"])
        if "Fn::GetAtt" in value:
            logical_id, attribute = value["Fn::GetAtt"]
            if attribute != "Arn":
                raise PolicyError(f"Fn::GetAtt {attribute} is not modelled")
            return self.arn(logical_id)
        if "Fn::Join" in value:
            separator, parts = value["Fn::Join"]
            return separator.join(str(self.resolve(part)) for part in parts)
        raise PolicyError(f"intrinsic {intrinsics[0]} is not modelled")

    def _ref(self, name: str) -> str:
        pseudo = {
            "AWS::AccountId": self.env.account,
            "AWS::Region": self.env.region,
            "AWS::Partition": self.env.partition,
            "AWS::URLSuffix": "amazonaws.com",
        }
        if name in pseudo:
            return pseudo[name]
        if name.startswith("AWS::"):
            raise PolicyError(f"pseudo parameter {name} is not modelled")
        return self.physical_name(name)


# --- requests and decisions -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Request:
    """One authorization: an action on one resource ARN ("*" for actions without resource-level permissions)."""

    action: str
    resource: str
    context: Mapping[str, ContextValue] = field(default_factory=dict)


ALLOW, EXPLICIT_DENY, IMPLICIT_DENY = "Allow", "ExplicitDeny", "ImplicitDeny"


@cache
def _glob(pattern: str, ignore_case: bool) -> re.Pattern[str]:
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.compile(regex, re.DOTALL | (re.IGNORECASE if ignore_case else 0))


def glob_match(pattern: str, value: str, *, ignore_case: bool = False) -> bool:
    return _glob(pattern, ignore_case).fullmatch(value) is not None


def arn_match(pattern: str, arn: str) -> bool:
    """IAM's ARN matching: the six colon-separated parts compared one by one, wildcards within each part."""
    if pattern == "*":
        return True
    if arn == "*":
        return False  # an action without resource-level permissions is only allowed on "*"
    pattern_parts, arn_parts = pattern.split(":", 5), arn.split(":", 5)
    if len(pattern_parts) != 6 or pattern_parts[0] != "arn":
        raise PolicyError(f"not an ARN pattern: {pattern!r}")
    if len(arn_parts) != 6:
        raise PolicyError(f"not an ARN: {arn!r}")
    return all(glob_match(p, a) for p, a in zip(pattern_parts, arn_parts, strict=True))


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if not isinstance(value, str):
        raise PolicyError(f"condition value {value!r} is not a string")
    return value


def _string_equals(p: str, v: str) -> bool:
    return p == v


def _string_equals_ignore_case(p: str, v: str) -> bool:
    return p.lower() == v.lower()


def _string_like(p: str, v: str) -> bool:
    return glob_match(p, v)


def _arn_like(p: str, v: str) -> bool:
    return v.startswith("arn:") and arn_match(p, v)


def _bool(p: str, v: str) -> bool:
    if p.lower() not in ("true", "false"):
        raise PolicyError(f"Bool condition value {p!r}")
    return p.lower() == v.lower()


# operator -> (how one policy value matches one context value, negated)
_OPERATORS = {
    "StringEquals": (_string_equals, False),
    "StringNotEquals": (_string_equals, True),
    "StringEqualsIgnoreCase": (_string_equals_ignore_case, False),
    "StringNotEqualsIgnoreCase": (_string_equals_ignore_case, True),
    "StringLike": (_string_like, False),
    "StringNotLike": (_string_like, True),
    "ArnEquals": (_arn_like, False),  # ArnEquals and ArnLike behave alike in IAM
    "ArnLike": (_arn_like, False),
    "ArnNotEquals": (_arn_like, True),
    "ArnNotLike": (_arn_like, True),
    "Bool": (_bool, False),
}


def _lookup(context: Mapping[str, ContextValue], key: str) -> ContextValue | None:
    lowered = key.lower()
    for name, value in context.items():
        if name.lower() == lowered:
            return value
    return None


def parse_operator(operator: str) -> tuple[str, str, bool]:
    """(set qualifier, base operator, IfExists) of a modelled operator; anything else raises."""
    qualifier, _, base = operator.rpartition(":")
    if_exists = base.endswith("IfExists")
    base = base.removesuffix("IfExists")
    if operator == "Null":
        return "", "Null", False
    if base not in _OPERATORS or qualifier not in ("", "ForAllValues", "ForAnyValue"):
        raise PolicyError(f"condition operator {operator} is not modelled")
    if qualifier and if_exists:
        raise PolicyError(f"{operator}: IfExists on a set operator is not modelled")
    return qualifier, base, if_exists


def condition_holds(operator: str, key: str, policy_values: Any, context: Mapping[str, ContextValue]) -> bool:
    """One key of one operator block: True when it is satisfied by the request context."""
    present = _lookup(context, key)
    values = [_text(v) for v in _listed(policy_values)]
    if operator == "Null":
        if values not in (["true"], ["false"]):
            raise PolicyError(f"Null condition value {policy_values!r}")
        absent = present is None or (isinstance(present, list | tuple) and not present)
        return absent == (values == ["true"])
    qualifier, base, if_exists = parse_operator(operator)
    match, negated = _OPERATORS[base]

    def one(context_value: str) -> bool:
        hit = any(match(p, context_value) for p in values)
        return not hit if negated else hit

    if qualifier:
        members = [] if present is None else [_text(v) for v in _listed(_plain(present))]
        if qualifier == "ForAllValues":
            return all(one(v) for v in members)  # vacuously true without the key, as in IAM
        return any(one(v) for v in members)
    if present is None:
        return if_exists or negated  # a negated operator is satisfied by a missing key, as in IAM
    if isinstance(present, list | tuple):
        raise PolicyError(f"multi-valued key {key} under single-valued operator {operator}")
    return one(_text(present))


_STATEMENT_KEYS = {"Sid", "Effect", "Action", "NotAction", "Resource", "NotResource", "Condition"}


def validate(statement: Mapping[str, Any]) -> None:
    """Reject what is not modelled before deciding anything, so no short-circuit hides it."""
    unknown = set(statement) - _STATEMENT_KEYS
    if unknown:
        raise PolicyError(f"statement elements not modelled in an identity policy: {sorted(unknown)}")
    if statement.get("Effect") not in ("Allow", "Deny"):
        raise PolicyError(f"Effect {statement.get('Effect')!r}")
    if ("Action" in statement) == ("NotAction" in statement):
        raise PolicyError("a statement needs exactly one of Action and NotAction")
    if ("Resource" in statement) == ("NotResource" in statement):
        raise PolicyError("a statement needs exactly one of Resource and NotResource")
    for operator in statement.get("Condition", {}):
        parse_operator(operator)


def statement_applies(statement: Mapping[str, Any], request: Request) -> bool:
    if not _action_hit(statement, request):
        return False
    resources = [_text(r) for r in _listed(statement.get("Resource", statement.get("NotResource")))]
    resource_hit = any(arn_match(r, request.resource) for r in resources)
    if resource_hit != ("Resource" in statement):
        return False
    conditions = statement.get("Condition", {})
    return all(
        condition_holds(operator, key, values, request.context)
        for operator, block in conditions.items()
        for key, values in block.items()
    )


def decide(statements: Sequence[Mapping[str, Any]], request: Request) -> str:
    """Every statement is validated (so an unmodelled construct anywhere errors), then Deny > Allow > implicit."""
    for statement in statements:
        validate(statement)
    applying = [statement["Effect"] for statement in statements if statement_applies(statement, request)]
    if "Deny" in applying:
        return EXPLICIT_DENY
    return ALLOW if "Allow" in applying else IMPLICIT_DENY


def explain(statements: Sequence[Mapping[str, Any]], request: Request) -> str:
    """Why ``request`` is not allowed, in terms of the statements: the one that denies it, or those that grant the
    action and what each of them did not match (its resource or a condition), or that none grants the action."""
    for statement in statements:
        if statement["Effect"] == "Deny" and statement_applies(statement, request):
            return f"denied explicitly by {_sid(statement)}"
    near = []
    for statement in statements:
        if statement["Effect"] != "Allow" or not _action_hit(statement, request):
            continue
        resources = [_text(r) for r in _listed(statement.get("Resource", statement.get("NotResource")))]
        if any(arn_match(r, request.resource) for r in resources) != ("Resource" in statement):
            near.append(f"{_sid(statement)} (resource {request.resource} is not among {resources})")
            continue
        failed = [
            f"{operator} {key}={values!r} (request: {_lookup(request.context, key)!r})"
            for operator, block in statement.get("Condition", {}).items()
            for key, values in block.items()
            if not condition_holds(operator, key, values, request.context)
        ]
        near.append(f"{_sid(statement)} (condition {'; '.join(failed)})")
    if not near:
        return f"no statement allows {request.action}"
    return f"no statement allows {request.action} on {request.resource}: " + ", ".join(near)


def _sid(statement: Mapping[str, Any]) -> str:
    return str(statement.get("Sid") or "a statement without Sid")


def _action_hit(statement: Mapping[str, Any], request: Request) -> bool:
    actions = [_text(a) for a in _listed(statement.get("Action", statement.get("NotAction")))]
    return any(glob_match(a, request.action, ignore_case=True) for a in actions) == ("Action" in statement)


def role_statements(
    template: Mapping[str, Any],
    role_logical_id: str,
    env: Environment | None = None,
    names: Mapping[str, str] | None = None,
) -> list[Any]:
    """Every identity statement of a role, resolved: its inline policies and the AWS::IAM::Policy /
    ManagedPolicy resources attached to it. AWS managed policies cannot be read offline, so they raise."""
    resolver = Resolver(template, env or Environment(), names or {})
    role = template["Resources"][role_logical_id]
    if role["Type"] != "AWS::IAM::Role":
        raise PolicyError(f"{role_logical_id} is not a role")
    properties = role.get("Properties", {})
    if properties.get("ManagedPolicyArns"):
        raise PolicyError(f"{role_logical_id} has managed policies the evaluator cannot read")
    documents = [policy["PolicyDocument"] for policy in properties.get("Policies", [])]
    for resource in template["Resources"].values():
        if resource["Type"] in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
            attached = resource["Properties"].get("Roles", [])
            if {"Ref": role_logical_id} in attached:
                documents.append(resource["Properties"]["PolicyDocument"])
            elif any(not (isinstance(r, dict) and set(r) == {"Ref"}) for r in attached):
                raise PolicyError(f"a policy attached to a role by {attached!r} is not modelled")
    return [resolver.resolve(statement) for document in documents for statement in _listed(document["Statement"])]
