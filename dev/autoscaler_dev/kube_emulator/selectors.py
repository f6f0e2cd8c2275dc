"""Label and field selectors with the API server's syntax and meaning."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

Predicate = Callable[[Mapping[str, Any]], bool]


class SelectorError(ValueError):
    """A selector the API server would answer with 400 Bad Request."""


_SET_REQUIREMENT = re.compile(r"^\s*(!?)\s*([A-Za-z0-9./_-]+)\s*(?:(notin|in)\s*\(([^)]*)\))?\s*$")
_BINARY_REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9./_-]+)\s*(==|=|!=|>|<)\s*([A-Za-z0-9._-]*)\s*$")


def _split(selector: str) -> list[str]:
    """Requirements are comma separated, but commas inside ``in (a,b)`` belong to the value set."""
    parts, depth, current = [], 0, ""
    for char in selector:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return [p for p in parts if p.strip()]


def _label_requirement(text: str) -> Predicate:
    binary = _BINARY_REQUIREMENT.match(text)
    if binary:
        key, op, value = binary.groups()
        if op in ("=", "=="):
            return lambda labels: labels.get(key) == value
        if op == "!=":
            return lambda labels: labels.get(key) != value
        try:
            bound = int(value)
        except ValueError:
            raise SelectorError(f"couldn't parse the selector string {text!r}: {value!r} is not an integer") from None
        if op == ">":
            return lambda labels: _int(labels.get(key)) is not None and _int(labels.get(key)) > bound  # type: ignore[operator]
        return lambda labels: _int(labels.get(key)) is not None and _int(labels.get(key)) < bound  # type: ignore[operator]
    match = _SET_REQUIREMENT.match(text)
    if not match:
        raise SelectorError(f"unable to parse requirement: {text.strip()!r}")
    negated, key, op, values = match.groups()
    if op is None:
        return (lambda labels: key not in labels) if negated else (lambda labels: key in labels)
    if negated:
        raise SelectorError(f"unable to parse requirement: {text.strip()!r}")
    members = frozenset(v.strip() for v in values.split(",") if v.strip())
    if op == "in":
        return lambda labels: labels.get(key) in members
    return lambda labels: labels.get(key) not in members


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def label_selector(selector: str | None) -> Predicate | None:
    """A predicate over an object's labels, or None when the selector selects everything."""
    if not selector or not selector.strip():
        return None
    requirements = [_label_requirement(part) for part in _split(selector)]

    def matches(obj: Mapping[str, Any]) -> bool:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return all(requirement(labels) for requirement in requirements)

    return matches


def field_value(obj: Mapping[str, Any], path: str) -> str:
    """A field as the API server's field sets render it: booleans lower case, absent values empty
    (``false`` for the boolean fields, as the server's defaulted objects say)."""
    value: Any = obj
    for part in path.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    if isinstance(value, bool):
        return str(value).lower()
    if value is None:
        return "false" if path in ("spec.unschedulable", "spec.hostNetwork") else ""
    return str(value)


_FIELD_REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9._-]+)\s*(==|=|!=)\s*(.*?)\s*$")


def field_selector(selector: str | None, supported: frozenset[str], resource: str) -> Predicate | None:
    """A predicate over the object's fields; a field the resource does not index is a 400, as on a real server."""
    if not selector or not selector.strip():
        return None
    requirements: list[tuple[str, bool, str]] = []
    for part in selector.split(","):
        if not part.strip():
            continue
        match = _FIELD_REQUIREMENT.match(part)
        if not match:
            raise SelectorError(f"invalid selector: '{selector}'; can't understand '{part}'")
        path, op, value = match.groups()
        if path not in supported:
            raise SelectorError(f'field label not supported: {path} for "{resource}"')
        requirements.append((path, op != "!=", value))

    def matches(obj: Mapping[str, Any]) -> bool:
        return all((field_value(obj, path) == value) is equal for path, equal, value in requirements)

    return matches


def selector_from_label_selector(selector: Mapping[str, Any] | None) -> Predicate:
    """A metav1.LabelSelector (matchLabels + matchExpressions) as a predicate; an empty one matches everything
    and a missing one (None) matches nothing, as PodDisruptionBudgets read it."""
    if selector is None:
        return lambda _obj: False
    parts = [f"{k}={v}" for k, v in (selector.get("matchLabels") or {}).items()]
    for expression in selector.get("matchExpressions") or []:
        key, op, values = expression["key"], expression["operator"], expression.get("values") or []
        parts.append(
            {
                "In": f"{key} in ({','.join(values)})",
                "NotIn": f"{key} notin ({','.join(values)})",
                "Exists": key,
                "DoesNotExist": f"!{key}",
            }[op]
        )
    predicate = label_selector(",".join(parts))
    return predicate or (lambda _obj: True)
