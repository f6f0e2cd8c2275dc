"""An independent check of the generated CRDs: evaluate their OpenAPI schema (with jsonschema) and their
CEL rules (with cel-python, plus Kubernetes' string extensions) on an object, as the API server would."""

from __future__ import annotations

import functools
import re
from typing import Any

import celpy
import jsonschema
from celpy import celtypes

from autoscaler.crds.conversion import with_conversion
from autoscaler.crds.generate import CRD_KINDS, crd_manifest


def _find(text: Any, pattern: Any) -> celtypes.StringType:
    match = re.search(str(pattern), str(text))
    return celtypes.StringType(match.group(0) if match else "")


def _split(text: Any, separator: Any) -> celtypes.ListType:
    return celtypes.ListType([celtypes.StringType(p) for p in str(text).split(str(separator))])


_FUNCTIONS = {"find": _find, "split": _split}  # Kubernetes' CEL string library, as far as our rules use it
_ENV = celpy.Environment()
_PROGRAMS: dict[str, Any] = {}


@functools.cache
def schema_for(kind: str, version: str = "v1") -> dict[str, Any]:
    """The OpenAPI schema the CRD of ``kind`` serves at ``version`` (v1beta1: the conversion CRD's)."""
    crd = next(c for c in CRD_KINDS if c.kind == kind)
    manifest = crd_manifest(crd)
    if version != "v1":
        manifest = with_conversion(manifest, crd, "https://conversion.example.com/")
    served = next(v for v in manifest["spec"]["versions"] if v["name"] == version)
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


def cel_failures(kind: str, obj: Any, old: Any = None, version: str = "v1") -> list[tuple[str, str]]:
    """(path, message) of every CEL rule that rejects ``obj``; transition rules only when ``old`` is given."""
    failures: list[tuple[str, str]] = []

    def walk(schema: dict[str, Any], value: Any, before: Any, path: str) -> None:
        for validation in schema.get("x-kubernetes-validations", []):
            transition = "oldSelf" in validation["rule"]
            if transition and before is None:
                continue
            if not _holds(validation["rule"], value, before if transition else None):
                failures.append((path, validation["message"]))
        if isinstance(value, dict):
            for key, child in value.items():
                sub = schema.get("properties", {}).get(key) or schema.get("additionalProperties")
                if isinstance(sub, dict):
                    prior = before.get(key) if isinstance(before, dict) else None
                    walk(sub, child, prior, f"{path}.{key}" if path else key)
        elif isinstance(value, list) and isinstance(schema.get("items"), dict):
            for index, child in enumerate(value):
                walk(schema["items"], child, None, f"{path}[{index}]")

    walk(schema_for(kind, version), obj, old, "")
    return failures


def schema_failures(kind: str, obj: Any, version: str = "v1") -> list[tuple[str, str]]:
    """(path, message) of every OpenAPI keyword (type, pattern, enum, bounds, required) ``obj`` breaks."""
    validator = jsonschema.Draft4Validator(schema_for(kind, version))
    return [(".".join(str(p) for p in e.absolute_path), e.message) for e in validator.iter_errors(obj)]
