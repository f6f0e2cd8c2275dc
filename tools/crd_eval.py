"""Evaluate a CRD's OpenAPI schema (with jsonschema) and its CEL rules (with cel-python, plus the Kubernetes CEL
string functions the Karpenter rules use) on an object, as the API server would at admission.

An independent second evaluator: the tests check our Python validation against our generated CRDs with it, and
``tools.karpenter_examples`` runs Karpenter's own CRDs on its examples.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

import celpy
import jsonschema
from celpy import celtypes


def _find(text: Any, pattern: Any) -> celtypes.StringType:
    match = re.search(str(pattern), str(text))
    return celtypes.StringType(match.group(0) if match else "")


def _split(text: Any, separator: Any) -> celtypes.ListType:
    return celtypes.ListType([celtypes.StringType(p) for p in str(text).split(str(separator))])


_FUNCTIONS = {"find": _find, "split": _split}  # Kubernetes' CEL string library, as far as the rules use it
_ENV = celpy.Environment()
_PROGRAMS: dict[str, Any] = {}


def served_schema(crd: Mapping[str, Any], version: str | None = None) -> dict[str, Any]:
    """The OpenAPI schema ``crd`` serves at ``version`` (default: its storage version)."""
    versions = crd["spec"]["versions"]
    served = next(v for v in versions if (v["name"] == version if version else v.get("storage")))
    schema: dict[str, Any] = served["schema"]["openAPIV3Schema"]
    return schema


def _holds(rule: str, value: Any, old: Any) -> bool:
    program = _PROGRAMS.get(rule)
    if program is None:
        program = _PROGRAMS[rule] = _ENV.program(_ENV.compile(rule), functions=_FUNCTIONS)
    activation = {"self": celpy.json_to_cel(value)}
    if old is not None:
        activation["oldSelf"] = celpy.json_to_cel(old)
    try:
        result = program.evaluate(activation)
    except Exception:
        return False  # an evaluation error (a missing key, say) rejects the object, as in the API server
    return bool(result) if not isinstance(result, celpy.CELEvalError) else False


def cel_failures(schema: Mapping[str, Any], obj: Any, old: Any = None) -> list[tuple[str, str]]:
    """(path, message) of every CEL rule that rejects ``obj``; transition rules only when ``old`` is given (and
    only where the old object has the same field, as the API server evaluates them)."""
    failures: list[tuple[str, str]] = []

    def walk(node: Mapping[str, Any], value: Any, before: Any, path: str) -> None:
        for validation in node.get("x-kubernetes-validations", []):
            transition = "oldSelf" in validation["rule"]
            if transition and before is None:
                continue
            if not _holds(validation["rule"], value, before if transition else None):
                failures.append((path, validation["message"]))
        if isinstance(value, dict):
            for key, child in value.items():
                sub = node.get("properties", {}).get(key) or node.get("additionalProperties")
                if isinstance(sub, dict):
                    prior = before.get(key) if isinstance(before, dict) else None
                    walk(sub, child, prior, f"{path}.{key}" if path else key)
        elif isinstance(value, list) and isinstance(node.get("items"), dict):
            for index, child in enumerate(value):
                walk(node["items"], child, None, f"{path}[{index}]")

    walk(schema, obj, old, "")
    return failures


def schema_failures(schema: Mapping[str, Any], obj: Any) -> list[tuple[str, str]]:
    """(path, message) of every OpenAPI keyword (type, pattern, enum, bounds, required) ``obj`` breaks."""
    validator = jsonschema.Draft4Validator(schema)
    return [(".".join(str(p) for p in e.absolute_path), e.message) for e in validator.iter_errors(obj)]


def cel_rules_applied(schema: Mapping[str, Any], obj: Any, old: Any = None) -> set[str]:
    """The messages of the CEL rules the API server evaluates on ``obj`` (those whose field is present, and
    transition rules where ``old`` has the field too), whatever their outcome."""
    applied: set[str] = set()

    def walk(node: Mapping[str, Any], value: Any, before: Any) -> None:
        for validation in node.get("x-kubernetes-validations", []):
            if "oldSelf" not in validation["rule"] or before is not None:
                applied.add(validation["message"])
        if isinstance(value, dict):
            for key, child in value.items():
                sub = node.get("properties", {}).get(key) or node.get("additionalProperties")
                if isinstance(sub, dict):
                    walk(sub, child, before.get(key) if isinstance(before, dict) else None)
        elif isinstance(value, list) and isinstance(node.get("items"), dict):
            for child in value:
                walk(node["items"], child, None)

    walk(schema, obj, old)
    return applied


def with_defaults(schema: Mapping[str, Any], obj: Any) -> Any:
    """``obj`` with the schema's defaults filled in where fields are absent, as the API server stores it."""
    if isinstance(obj, dict):
        properties = schema.get("properties", {})
        filled = dict(obj)
        for key, sub in properties.items():
            if key not in filled and "default" in sub:
                filled[key] = copy.deepcopy(sub["default"])
        extra = schema.get("additionalProperties")
        return {
            key: with_defaults(properties.get(key) or (extra if isinstance(extra, dict) else {}), value)
            for key, value in filled.items()
        }
    if isinstance(obj, list) and isinstance(schema.get("items"), dict):
        return [with_defaults(schema["items"], item) for item in obj]
    return obj
