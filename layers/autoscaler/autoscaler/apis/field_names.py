"""The field names a model accepts at a place in an object, for "did you mean" on an unknown field."""

from __future__ import annotations

import difflib
import types
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Union, get_args, get_origin

from autoscaler.apis.rules import ApiModel


def _models(annotation: Any) -> list[type[ApiModel]]:
    """The API models an annotation can hold directly (through Optional, unions and Annotated)."""
    if isinstance(annotation, type) and issubclass(annotation, ApiModel):
        return [annotation]
    origin = get_origin(annotation)
    if origin is Annotated:
        return _models(get_args(annotation)[0])
    if origin is Union or origin is types.UnionType:
        return [model for arg in get_args(annotation) for model in _models(arg)]
    return []


def _step(annotation: Any, part: int | str) -> list[Any]:
    """The annotations found one step down ``part`` (a field's wire name, a list index or a map key)."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _step(get_args(annotation)[0], part)
    if origin is Union or origin is types.UnionType:
        return [found for arg in get_args(annotation) for found in _step(arg, part)]
    if isinstance(origin, type) and issubclass(origin, Mapping):
        return [get_args(annotation)[1]]
    if isinstance(origin, type) and issubclass(origin, Sequence) and not issubclass(origin, str):
        return [get_args(annotation)[0]]
    found = []
    for model in _models(annotation):
        for name, info in model.model_fields.items():
            if part in (name, info.alias):
                found.append(info.annotation)
    return found


def suggestion(model: type[ApiModel], location: Sequence[int | str]) -> str | None:
    """The known field closest to the unknown one at ``location`` (its last part), if one is close enough."""
    annotations: list[Any] = [model]
    for part in location[:-1]:
        annotations = [found for annotation in annotations for found in _step(annotation, part)]
    names = {info.alias or name for a in annotations for m in _models(a) for name, info in m.model_fields.items()}
    matches = difflib.get_close_matches(str(location[-1]), sorted(names), n=1, cutoff=0.75)
    return matches[0] if matches else None
