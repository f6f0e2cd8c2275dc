"""Label selectors (``metav1.LabelSelector``) over pod and namespace labels."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from autoscaler.scheduling.requirements import DOES_NOT_EXIST, EXISTS, IN, NOT_IN, RequirementError

Expression = tuple[str, str, frozenset[str]]


class LabelSelector:
    """A parsed label selector. ``None`` stands for a null selector, which selects nothing; an empty
    selector selects everything. Equal selectors compare and hash equal."""

    __slots__ = ("_hash", "expressions", "match_labels")

    def __init__(self, match_labels: frozenset[tuple[str, str]], expressions: frozenset[Expression]) -> None:
        self.match_labels = match_labels
        self.expressions = expressions
        self._hash = hash((match_labels, expressions))

    @classmethod
    def parse(cls, raw: Mapping[str, Any] | None) -> LabelSelector | None:
        if raw is None:
            return None
        expressions = []
        for expression in raw.get("matchExpressions") or ():
            operator = str(expression.get("operator"))
            if operator not in (IN, NOT_IN, EXISTS, DOES_NOT_EXIST):
                raise RequirementError(f"label selector operator {operator!r} is not In, NotIn, Exists or DoesNotExist")
            values = frozenset(str(v) for v in expression.get("values") or ())
            expressions.append((str(expression["key"]), operator, values))
        labels = frozenset((str(k), str(v)) for k, v in (raw.get("matchLabels") or {}).items())
        return cls(labels, frozenset(expressions))

    def with_expression(self, key: str, value: str) -> LabelSelector:
        """This selector narrowed to ``key In [value]`` (how matchLabelKeys apply)."""
        return LabelSelector(self.match_labels, self.expressions | {(key, IN, frozenset({value}))})

    def matches(self, labels: Mapping[str, str]) -> bool:
        for key, value in self.match_labels:
            if labels.get(key) != value:
                return False
        for key, operator, values in self.expressions:
            present = key in labels
            if operator == IN:
                if not present or labels[key] not in values:
                    return False
            elif operator == NOT_IN:
                if present and labels[key] in values:
                    return False
            elif operator == EXISTS:
                if not present:
                    return False
            elif present:
                return False
        return True

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LabelSelector):
            return NotImplemented
        return self.match_labels == other.match_labels and self.expressions == other.expressions

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        parts = [f"{k}={v}" for k, v in sorted(self.match_labels)]
        parts += [f"{k} {op} {sorted(vs)}" if vs else f"{k} {op}" for k, op, vs in sorted(self.expressions)]
        return "{" + ", ".join(parts) + "}"
