"""Validation rules stated once and enforced twice: as CEL in the CRDs for the API server, and in Python.

A :class:`Rule` is pydantic ``Annotated`` metadata. On a field it validates the field's value; listed
in a model's ``__rules__`` it validates the whole object. Either way the same rule also lands in the
generated CRD as an ``x-kubernetes-validations`` entry, so the API server and our functions agree on
what is valid. A rule with ``cel=None`` is checked in Python only (what OpenAPI cannot say, or a clearer
message for what the CRD rejects anyway).

A :class:`RuntimeRule` is Karpenter's runtime validation (its NodePool's ``RuntimeValidate``): the API server
stores such an object, and the controller reports the problems in the ``ValidationSucceeded`` condition. They
never fail parsing; ``autoscaler.apis.validation.runtime_errors`` collects them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, GetCoreSchemaHandler, GetJsonSchemaHandler, ValidationError, model_validator
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, InitErrorDetails, PydanticCustomError, core_schema

VALIDATIONS = "x-kubernetes-validations"
RULE_ERROR = "cel"
RUNTIME_RULE = "runtime"


@dataclass(frozen=True)
class Rule:
    """A predicate with the message the API server prints when it is false.

    ``check`` receives the validated Python value (a model, a list, a dict or a scalar) and returns
    True when the value is valid. ``cel`` is the equivalent CEL expression over ``self``.
    """

    message: str
    cel: str | None
    check: Callable[[Any], bool]

    def error(self) -> PydanticCustomError:
        kind = RULE_ERROR if self.cel is not None else RUNTIME_RULE
        return PydanticCustomError(kind, self.message, {"rule": self.cel or "runtime validation"})

    def validate(self, value: Any) -> Any:
        if not self.check(value):
            raise self.error()
        return value

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        return core_schema.no_info_after_validator_function(self.validate, handler(source))

    def __get_pydantic_json_schema__(self, schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        json_schema = handler(schema)
        if self.cel is not None:
            target = handler.resolve_ref_schema(json_schema)
            target.setdefault(VALIDATIONS, []).append({"message": self.message, "rule": self.cel})
        return json_schema


@dataclass(frozen=True, eq=False)
class Schema:
    """Extra OpenAPI keywords for a field that pydantic cannot infer (formats, list types)."""

    extra: dict[str, Any]

    def __get_pydantic_json_schema__(self, schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        json_schema = handler(schema)
        handler.resolve_ref_schema(json_schema).update(self.extra)
        return json_schema


INT32 = Schema({"format": "int32"})
INT64 = Schema({"format": "int64"})
DATE_TIME = Schema({"format": "date-time"})
ATOMIC_LIST = Schema({"x-kubernetes-list-type": "atomic"})
SET_LIST = Schema({"x-kubernetes-list-type": "set"})
ATOMIC_MAP = Schema({"x-kubernetes-map-type": "atomic"})
GRANULAR_MAP = Schema({"x-kubernetes-map-type": "granular"})


@dataclass(frozen=True)
class RuntimeRule:
    """A check Karpenter makes in its controller, not at admission: ``problems`` lists what is wrong (empty when
    nothing is), each problem a sentence naming the field and value."""

    name: str
    problems: Callable[[Any], list[str]]


@dataclass(frozen=True)
class TransitionRule:
    """A rule over an update (CEL's ``oldSelf``), checked when an existing object is replaced. ``check`` gets the
    old and the new value. In a model's ``__transition_rules__`` it constrains the whole object; as ``Annotated``
    metadata, the field's value."""

    message: str
    cel: str
    check: Callable[[Any, Any], bool]

    def __get_pydantic_json_schema__(self, schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        json_schema = handler(schema)
        # Beside a reference, not on the shared definition: other fields of the same type do not get the rule.
        json_schema.setdefault(VALIDATIONS, []).append({"message": self.message, "rule": self.cel})
        return json_schema


class ApiModel(BaseModel):
    """Base of every API object part: camelCase on the wire, unknown fields rejected, rules enforced."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, validate_default=False)

    # Object-level rules, checked after the fields validate (as CEL on the object is).
    __rules__: ClassVar[tuple[Rule, ...]] = ()
    # Update rules, checked by ``validate_update`` and emitted as CEL transition rules.
    __transition_rules__: ClassVar[tuple[TransitionRule, ...]] = ()
    # Karpenter's runtime validation of this part, collected by ``runtime_errors`` (never by parsing).
    __runtime_rules__: ClassVar[tuple[RuntimeRule, ...]] = ()

    @model_validator(mode="after")
    def _check_object_rules(self) -> ApiModel:
        # Every rule of the object, as the API server evaluates every CEL rule and reports each that fails.
        failed = [rule for rule in type(self).__rules__ if not rule.check(self)]
        if len(failed) == 1:
            raise failed[0].error()
        if failed:
            body = self.model_dump(mode="json", by_alias=True, exclude_none=True)
            details = [InitErrorDetails(type=rule.error(), loc=(), input=body) for rule in failed]
            raise ValidationError.from_exception_data(type(self).__name__, details)
        return self

    @classmethod
    def __get_pydantic_json_schema__(cls, schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        json_schema = handler(schema)
        target = handler.resolve_ref_schema(json_schema)
        # Transition rules first, as controller-gen writes Karpenter's.
        rules: list[dict[str, str]] = [{"message": r.message, "rule": r.cel} for r in cls.__transition_rules__]
        rules += [{"message": r.message, "rule": r.cel} for r in cls.__rules__ if r.cel is not None]
        if rules:
            target[VALIDATIONS] = rules
        return json_schema

    def to_dict(self) -> dict[str, Any]:
        """The object as Kubernetes stores it: camelCase keys, unset optional fields absent."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class LenientModel(ApiModel):
    """For parts the controllers write (status, metadata): unknown fields are kept, not rejected,
    so that reading an object written by a newer Karpenter never fails and never loses data."""

    model_config = ConfigDict(extra="allow")


def has(value: Any) -> bool:
    """CEL's ``has()`` on an optional field of ours: present means not None."""
    return value is not None
