"""Reading the synthesized IAM policies: statements' actions and resources as lists, CloudFormation values as
text, a function role's statements by Sid, and the mutating actions left on wildcard resources without a tag
condition (shared by test_iam.py and test_iam_wildcards.py)."""

from __future__ import annotations

import json
from typing import Any

from tests.infra.conftest import Synthesized


def actions(statement: dict[str, Any]) -> list[str]:
    actions = statement["Action"]
    return actions if isinstance(actions, list) else [actions]


def resources(statement: dict[str, Any]) -> list[Any]:
    resources = statement["Resource"]
    return resources if isinstance(resources, list) else [resources]


def render(value: Any) -> str:
    if isinstance(value, str):
        return value
    if "Fn::Join" in value:
        return "".join(render(part) for part in value["Fn::Join"][1])
    if "Ref" in value:
        return "${" + value["Ref"] + "}"
    return json.dumps(value)


def by_sid(synth: Synthesized, name: str) -> dict[str, dict[str, Any]]:
    return {s["Sid"]: s for s in synth.policy_statements(synth.stack.functions[name].role) if "Sid" in s}


# Read-only verbs, and writes that have no resource to scope (X-Ray's trace upload).
_READ_PREFIXES = ("Describe", "Get", "List")
_UNSCOPABLE_WRITES = {"xray:PutTraceSegments", "xray:PutTelemetryRecords"}
# RunInstances/CreateFleet name these as inputs they read, never change; Karpenter scopes them the same way.
_LAUNCH_INPUT_TYPES = (
    "image/*",
    "snapshot/*",
    "security-group/*",
    "subnet/*",
    "placement-group/*",
    "capacity-reservation/*",
)


def mutating_on_wildcards_without_tags(synth: Synthesized, allowed_sids: tuple[str, ...] = ()) -> list[str]:
    found = []
    for policy in synth.of_type("AWS::IAM::Policy").values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            if statement.get("Sid") in allowed_sids:
                continue
            mutating = [
                a
                for a in actions(statement)
                if not a.split(":")[1].startswith(_READ_PREFIXES) and a not in _UNSCOPABLE_WRITES
            ]
            wildcards = [
                r
                for r in map(render, resources(statement))
                if "*" in r
                and not (r.endswith(_LAUNCH_INPUT_TYPES) and set(mutating) <= {"ec2:RunInstances", "ec2:CreateFleet"})
            ]
            keys = json.dumps(statement.get("Condition", {}))
            tagged = "aws:ResourceTag/" in keys or "aws:RequestTag/" in keys
            if mutating and wildcards and not tagged:
                found.append(f"{statement.get('Sid')}: {mutating} on {wildcards}")
    return found
