"""Find IAM policy conditions keyed on ``karpenter.sh/managed-by``, the tag Karpenter v1 no longer writes.

Accepts a policy document, the output of ``aws iam get-policy-version`` / ``get-role-policy``, or a
CloudFormation template in JSON: every statement found anywhere in the file is checked.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

MANAGED_BY = "karpenter.sh/managed-by"


@dataclass(frozen=True)
class ManagedByCondition:
    statement: str  # the statement's Sid, or its position in the file
    operator: str
    key: str


class PolicyFileError(ValueError):
    """The file is not JSON or YAML."""


def parse_policy(text: str) -> Any:
    """A policy file's content: JSON, or YAML without CloudFormation's short-form tags."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise PolicyFileError(f"neither JSON nor YAML: {str(error).splitlines()[0]}") from None


def _statements(node: Any, where: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    if isinstance(node, Mapping):
        if "Effect" in node and ("Action" in node or "NotAction" in node):
            yield str(node.get("Sid") or where), node
            return
        for key, child in node.items():
            yield from _statements(child, f"{where}.{key}" if where else str(key))
    elif isinstance(node, list):
        for index, child in enumerate(node):
            yield from _statements(child, f"{where}[{index}]")


def _mentions(value: Any) -> bool:
    if isinstance(value, str):
        return MANAGED_BY in value
    if isinstance(value, list):
        return any(_mentions(v) for v in value)
    return False


def managed_by_conditions(policy: Any) -> list[ManagedByCondition]:
    """Every condition whose key (``aws:ResourceTag/karpenter.sh/managed-by``, ...) or value (as in
    ``aws:TagKeys``) names the managed-by tag."""
    found = []
    for statement, body in _statements(policy, ""):
        conditions = body.get("Condition")
        if not isinstance(conditions, Mapping):
            continue
        for operator, clauses in conditions.items():
            if not isinstance(clauses, Mapping):
                continue
            for key, value in clauses.items():
                if MANAGED_BY in str(key) or _mentions(value):
                    found.append(ManagedByCondition(statement, str(operator), str(key)))
    return found
