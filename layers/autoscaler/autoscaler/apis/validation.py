"""Validate Kubernetes objects of our kinds and report errors as the API server words them.

``parse`` turns a manifest dict into its model or raises :class:`InvalidObjectError` carrying every
:class:`FieldError` (JSON path, the rule that failed, and the API server's message). ``validate_update`` adds
the rules over an update (CEL ``oldSelf``); ``runtime_errors`` lists what Karpenter's controller, not the API
server, would find wrong with an admitted object.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from autoscaler.apis.autoscaling import CapacityBuffer
from autoscaler.apis.field_names import suggestion
from autoscaler.apis.rules import RULE_ERROR, RUNTIME_RULE, ApiModel, TransitionRule
from autoscaler.apis.v1.ec2nodeclass import EC2NodeClass
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.apis.v1.nodepool import NodePool
from autoscaler.apis.v1alpha1 import NodeOverlay

KINDS: dict[tuple[str, str], type[ApiModel]] = {
    ("karpenter.sh/v1", "NodePool"): NodePool,
    ("karpenter.sh/v1", "NodeClaim"): NodeClaim,
    ("karpenter.k8s.aws/v1", "EC2NodeClass"): EC2NodeClass,
    ("karpenter.sh/v1alpha1", "NodeOverlay"): NodeOverlay,
    ("autoscaling.x-k8s.io/v1beta1", "CapacityBuffer"): CapacityBuffer,
}
RUNTIME_VALIDATION = "runtime validation"

# Fields that Karpenter v1 moved or removed: an unknown-field error there says where it went.
MOVED_FIELDS: dict[tuple[str, str], str] = {
    ("NodePool", "spec.template.spec.kubelet"): "kubelet settings moved to EC2NodeClass.spec.kubelet in v1",
    ("NodePool", "spec.disruption.expireAfter"): "expireAfter moved to spec.template.spec.expireAfter in v1",
    (
        "NodePool",
        "spec.template.spec.nodeClassRef.apiVersion",
    ): "nodeClassRef.apiVersion became 'group' in v1",
    ("NodeClaim", "spec.kubelet"): "kubelet settings moved to EC2NodeClass.spec.kubelet in v1",
    ("NodeClaim", "spec.nodeClassRef.apiVersion"): "nodeClassRef.apiVersion became 'group' in v1",
}


@dataclass(frozen=True)
class FieldError:
    """One failed rule: where (JSON path), which rule, and the API server's message."""

    path: str
    rule: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class InvalidObjectError(ValueError):
    """The object does not satisfy the API's schema and rules."""

    def __init__(self, kind: str, name: str, errors: Sequence[FieldError]) -> None:
        self.kind, self.name, self.errors = kind, name, list(errors)
        details = "; ".join(str(e) for e in self.errors)
        super().__init__(f'{kind} "{name}" is invalid: {details}')


_UNION_MEMBERS = ("int", "str", "function-after")


def format_path(location: Sequence[int | str]) -> str:
    """pydantic's error location as a Kubernetes field path: ``spec.budgets[0].nodes``, ``tags[a/b]``."""
    path = ""
    for part in location:
        if isinstance(part, int):
            path += f"[{part}]"
        elif part in _UNION_MEMBERS or part.startswith("function-"):
            continue  # pydantic's name for a branch of a union, not a field
        elif re.fullmatch(r"[A-Za-z][A-Za-z0-9]*", part):
            path += f".{part}" if path else part
        else:
            path += f"[{part}]"  # a map key: label and tag keys hold dots and slashes
    return path


def _shown(value: Any) -> str:
    """A value as the API server quotes it in a message: strings and numbers literally, else the type."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (str, int, float)):
        return json.dumps(value)
    return f'"{_json_type(value)}"'


def _json_type(value: Any) -> str:
    if isinstance(value, (Mapping, ApiModel)):
        return "object"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, bool):
        return "boolean"
    return {int: "integer", float: "number"}.get(type(value), "string")


# pydantic bound errors -> (OpenAPI keyword, context key, the API server's words)
_BOUNDS = {
    "less_than_equal": ("maximum", "le", "should be less than or equal to"),
    "greater_than_equal": ("minimum", "ge", "should be greater than or equal to"),
    "less_than": ("exclusiveMaximum", "lt", "should be less than"),
    "greater_than": ("exclusiveMinimum", "gt", "should be greater than"),
}
_TYPE_NAMES = {
    "int": "integer",
    "str": "string",
    "bool": "boolean",
    "dict": "object",
    "list": "array",
    "model": "object",
    "float": "number",
}


def _field_error(kind: str, error: ErrorDetails, model: type[ApiModel] | None = None) -> FieldError:
    """One pydantic error in the words of the API server, with the rule (CEL or OpenAPI keyword) that failed."""
    path = format_path(error["loc"])
    code, ctx, value = error["type"], error.get("ctx", {}), error.get("input")
    shown = _shown(value)
    if code == "extra_forbidden":
        hint = MOVED_FIELDS.get((kind, path))
        close = suggestion(model, error["loc"]) if model is not None and hint is None else None
        if close is not None:
            hint = f'did you mean "{close}"?'
        return FieldError(path, "strict field validation", f'unknown field "{path}"' + (f": {hint}" if hint else ""))
    if code == "missing":
        return FieldError(path, "required", "Required value")
    if code in (RULE_ERROR, RUNTIME_RULE):
        return FieldError(path, str(ctx.get("rule", "")), f'Invalid value: "{_json_type(value)}": {error["msg"]}')
    if code == "removed":
        return FieldError(path, "enum", f"Unsupported value: {shown}: {error['msg']}")
    if code in ("literal_error", "enum"):
        expected = str(ctx.get("expected", "")).replace("'", '"').replace(" or ", ", ")
        return FieldError(path, "enum", f"Unsupported value: {shown}: supported values: {expected}")
    if code == "string_pattern_mismatch":
        pattern = ctx.get("pattern", "")
        return FieldError(
            path, f"pattern {pattern}", f"Invalid value: {shown}: {path} in body should match '{pattern}'"
        )
    if code in _BOUNDS:
        keyword, key, words = _BOUNDS[code]
        return FieldError(
            path,
            f"{keyword} {ctx.get(key)}",
            f"Invalid value: {shown}: {path} in body {words} {ctx.get(key)}",
        )
    if code == "string_too_long":
        return FieldError(
            path,
            f"maxLength {ctx.get('max_length')}",
            f"Too long: may not be more than {ctx.get('max_length')} bytes",
        )
    if code == "string_too_short":
        limit = ctx.get("min_length")
        return FieldError(
            path,
            f"minLength {limit}",
            f"Invalid value: {shown}: {path} in body should be at least {limit} chars long",
        )
    if code == "too_long":
        items = "properties" if isinstance(value, Mapping) else "items"
        limit = ctx.get("max_length")
        return FieldError(
            path,
            f"max{items.capitalize()} {limit}",
            f"Too many: {ctx.get('actual_length')}: must have at most {limit} {items}",
        )
    if code == "too_short":
        limit = ctx.get("min_length")
        return FieldError(
            path,
            f"minItems {limit}",
            f"Invalid value: {ctx.get('actual_length')}: {path} in body should have at least {limit} items",
        )
    if code.endswith(("_type", "_parsing")):
        expected = _TYPE_NAMES.get(code.rsplit("_", 1)[0], code.rsplit("_", 1)[0])
        found = _json_type(value)
        return FieldError(
            path,
            f"type {expected}",
            f'Invalid value: "{found}": {path} in body must be of type {expected}: "{found}"',
        )
    return FieldError(path, code, f"Invalid value: {shown}: {error['msg']}")


def model_for(document: Mapping[str, Any], kinds: Mapping[tuple[str, str], type[ApiModel]] = KINDS) -> type[ApiModel]:
    """The model class for a manifest's apiVersion and kind, or an InvalidObjectError naming them."""
    api_version, kind = document.get("apiVersion"), document.get("kind")
    model = kinds.get((str(api_version), str(kind)))
    if model is None:
        supported = ", ".join(f"{k} ({v})" for v, k in kinds)
        if kinds is KINDS and str(api_version).endswith("/v1beta1"):
            supported += "; convert v1beta1 manifests with `autoscaler convert`"
        raise InvalidObjectError(
            str(kind),
            _name(document),
            [
                FieldError(
                    "",
                    "kind",
                    f'no kind "{kind}" is registered for version "{api_version}": serving {supported}',
                )
            ],
        )
    return model


def _name(document: Mapping[str, Any]) -> str:
    metadata = document.get("metadata")
    return str(metadata.get("name", "")) if isinstance(metadata, Mapping) else ""


def parse(document: Mapping[str, Any], kinds: Mapping[tuple[str, str], type[ApiModel]] = KINDS) -> ApiModel:
    """The validated, defaulted model of a manifest; raises InvalidObjectError with every error.

    ``kinds`` are the (apiVersion, kind) pairs accepted: the v1 API we serve unless told otherwise
    (conversion passes v1beta1's as well)."""
    if not isinstance(document, Mapping):
        raise InvalidObjectError("", "", [FieldError("", "type object", "Object 'Kind' is missing: not an object")])
    model = model_for(document, kinds)
    kind = str(document.get("kind"))
    try:
        obj = model.model_validate(dict(document))
    except ValidationError as error:
        errors = list(dict.fromkeys(_field_error(kind, e, model) for e in error.errors()))
        raise InvalidObjectError(kind, _name(document), errors) from None
    if not obj.metadata.name and not obj.metadata.generate_name:  # type: ignore[attr-defined]
        raise InvalidObjectError(
            kind,
            "",
            [FieldError("metadata.name", "required", "Required value: name or generateName is required")],
        )
    return obj


def _fields(model: ApiModel) -> list[tuple[str, str, list[Any]]]:
    """(attribute, wire name, metadata) of each field of ``model``."""
    return [(name, info.alias or name, info.metadata) for name, info in type(model).model_fields.items()]


def validate_update(old: ApiModel, new: ApiModel) -> list[FieldError]:
    """Errors from the transition rules (CEL ``oldSelf``) of every part of an updated object."""
    errors: list[FieldError] = []

    def check(path: str, rules: Sequence[TransitionRule], before: Any, after: Any) -> None:
        for rule in rules:
            if not rule.check(before, after):
                errors.append(FieldError(path, rule.cel, f'Invalid value: "object": {rule.message}'))

    def walk(path: str, before: Any, after: Any) -> None:
        if not isinstance(before, ApiModel) or not isinstance(after, ApiModel) or type(before) is not type(after):
            return
        check(path, type(after).__transition_rules__, before, after)
        for name, wire, metadata in _fields(after):
            child = f"{path}.{wire}" if path else wire
            previous, current = getattr(before, name), getattr(after, name)
            if previous is not None and current is not None:
                check(child, [m for m in metadata if isinstance(m, TransitionRule)], previous, current)
            walk(child, previous, current)

    walk("", old, new)
    return errors


def runtime_errors(obj: ApiModel) -> list[FieldError]:
    """What Karpenter's runtime validation finds wrong with an admitted object (its ``ValidationSucceeded``
    condition): one error per problem, at the part of the object whose rule found it."""
    errors: list[FieldError] = []

    def walk(path: str, value: Any) -> None:
        if isinstance(value, list):
            for index, item in enumerate(value):
                walk(f"{path}[{index}]", item)
            return
        if not isinstance(value, ApiModel):
            return
        for rule in type(value).__runtime_rules__:
            errors.extend(FieldError(path, RUNTIME_VALIDATION, problem) for problem in rule.problems(value))
        for name, wire, _ in _fields(value):
            walk(f"{path}.{wire}" if path else wire, getattr(value, name))

    walk("", obj)
    return errors
