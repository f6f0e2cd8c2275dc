"""The requirements algebra: sets of allowed label values per key, as Karpenter reasons about them.

A :class:`Requirement` is a set of values for one label key, closed under intersection: ``In``
and ``DoesNotExist`` are finite sets (the latter empty), ``NotIn`` and ``Exists`` are complements
of finite sets, and ``Gt``/``Lt``/``Gte``/``Lte`` are complements restricted to integers within
inclusive bounds. :class:`Requirements` maps keys to requirements; adding a requirement for a key
already present intersects the two. Beta label keys are read as their stable names.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from autoscaler.apis.v1.labels import normalize_label

IN, NOT_IN, EXISTS, DOES_NOT_EXIST = "In", "NotIn", "Exists", "DoesNotExist"
GT, LT, GTE, LTE = "Gt", "Lt", "Gte", "Lte"
OPERATORS = frozenset({IN, NOT_IN, EXISTS, DOES_NOT_EXIST, GT, LT, GTE, LTE})
_NEGATIVE = (NOT_IN, DOES_NOT_EXIST)


class RequirementError(ValueError):
    """A node selector requirement that cannot be interpreted (unknown operator, non-integer bound)."""


def _integer(value: str) -> int | None:
    try:
        return int(value)
    except ValueError:
        return None


def _within(value: str, gte: int | None, lte: int | None) -> bool:
    if gte is None and lte is None:
        return True
    number = _integer(value)
    if number is None:
        return False
    return (gte is None or number >= gte) and (lte is None or number <= lte)


class Requirement:
    """The values a label may take. Immutable; equal requirements hash equally."""

    __slots__ = ("_hash", "complement", "gte", "key", "lte", "min_values", "values")

    def __init__(
        self,
        key: str,
        complement: bool,
        values: frozenset[str] = frozenset(),
        *,
        gte: int | None = None,
        lte: int | None = None,
        min_values: int | None = None,
    ) -> None:
        self.key = key
        self.complement = complement
        self.values = values
        self.gte = gte
        self.lte = lte
        self.min_values = min_values
        self._hash = hash((key, complement, values, gte, lte, min_values))

    @classmethod
    def of(cls, key: str, operator: str, values: Iterable[str] = (), min_values: int | None = None) -> Requirement:
        """Build from a node selector requirement (``key``, ``operator``, ``values``)."""
        key = normalize_label(key)
        values = tuple(values)
        if operator == IN:
            return cls(key, False, frozenset(values), min_values=min_values)
        if operator == NOT_IN:
            return cls(key, True, frozenset(values), min_values=min_values)
        if operator == EXISTS:
            return cls(key, True, min_values=min_values)
        if operator == DOES_NOT_EXIST:
            return cls(key, False, min_values=min_values)
        if operator not in OPERATORS:
            raise RequirementError(f"unknown operator {operator!r} for key {key!r}")
        bound = _integer(values[0]) if len(values) == 1 else None
        if bound is None:
            raise RequirementError(f"operator {operator} on key {key!r} needs one integer value, got {list(values)}")
        if operator == GT:
            return cls(key, True, gte=bound + 1, min_values=min_values)
        if operator == LT:
            return cls(key, True, lte=bound - 1, min_values=min_values)
        if operator == GTE:
            return cls(key, True, gte=bound, min_values=min_values)
        return cls(key, True, lte=bound, min_values=min_values)

    # --- the set view ----------------------------------------------------------------------------
    @property
    def operator(self) -> str:
        """The canonical operator: bounded requirements read as Exists (or NotIn) with bounds."""
        if self.complement:
            return NOT_IN if self.values else EXISTS
        return IN if self.values else DOES_NOT_EXIST

    def has(self, value: str) -> bool:
        if self.complement:
            return value not in self.values and _within(value, self.gte, self.lte)
        return value in self.values

    def intersection(self, other: Requirement) -> Requirement:
        """The values allowed by both; the larger minValues wins."""
        if other is self:
            return self
        gte = _pick(self.gte, other.gte, max)
        lte = _pick(self.lte, other.lte, min)
        min_values = _pick(self.min_values, other.min_values, max)
        if gte is not None and lte is not None and gte > lte:
            return Requirement(self.key, False, min_values=min_values)
        complement = self.complement and other.complement
        if complement:
            values = self.values | other.values
        elif self.complement:
            values = frozenset(v for v in other.values if v not in self.values and _within(v, gte, lte))
        elif other.complement:
            values = frozenset(v for v in self.values if v not in other.values and _within(v, gte, lte))
        else:
            values = self.values & other.values
        if not complement:
            gte = lte = None  # a finite set carries no bounds
        if (complement, values, gte, lte, min_values) == (
            self.complement,
            self.values,
            self.gte,
            self.lte,
            self.min_values,
        ):
            return self
        return Requirement(self.key, complement, values, gte=gte, lte=lte, min_values=min_values)

    def has_intersection(self, other: Requirement) -> bool:
        """True when some value satisfies both (without building the intersection)."""
        gte = _pick(self.gte, other.gte, max)
        lte = _pick(self.lte, other.lte, min)
        if gte is not None and lte is not None and gte > lte:
            return False
        if self.complement and other.complement:
            return True
        if self.complement:
            return any(v not in self.values and _within(v, gte, lte) for v in other.values)
        if other.complement:
            return any(v not in other.values and _within(v, gte, lte) for v in self.values)
        return not self.values.isdisjoint(other.values)

    def any_value(self) -> str | None:
        """A deterministic member for ``In`` requirements (the smallest), else None."""
        return min(self.values) if not self.complement and self.values else None

    def to_selector(self) -> list[dict[str, Any]]:
        """As node selector requirements (a bounded requirement with both bounds needs two)."""
        extra: dict[str, Any] = {} if self.min_values is None else {"minValues": self.min_values}
        if self.gte is not None or self.lte is not None:
            bounds = [(GTE, self.gte), (LTE, self.lte)]
            return [{"key": self.key, "operator": op, "values": [str(b)], **extra} for op, b in bounds if b is not None]
        operator = self.operator
        if operator in (EXISTS, DOES_NOT_EXIST):
            return [{"key": self.key, "operator": operator, **extra}]
        return [{"key": self.key, "operator": operator, "values": sorted(self.values), **extra}]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Requirement):
            return NotImplemented
        return self._hash == other._hash and (
            self.key,
            self.complement,
            self.values,
            self.gte,
            self.lte,
            self.min_values,
        ) == (other.key, other.complement, other.values, other.gte, other.lte, other.min_values)

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        operator = self.operator
        text = f"{self.key} {operator}"
        if operator in (IN, NOT_IN):
            shown = sorted(self.values)
            text += " [" + ", ".join(shown[:5]) + (f", and {len(shown) - 5} others" if len(shown) > 5 else "") + "]"
        if self.gte is not None:
            text += f" >={self.gte}"
        if self.lte is not None:
            text += f" <={self.lte}"
        if self.min_values is not None:
            text += f" minValues {self.min_values}"
        return text


def _pick(a: int | None, b: int | None, choose: Any) -> int | None:
    if a is None:
        return b
    if b is None:
        return a
    return int(choose(a, b))


def exists(key: str) -> Requirement:
    return Requirement(key, True)


def is_negative(requirement: Requirement) -> bool:
    """NotIn or DoesNotExist: a constraint a node without the label satisfies."""
    return requirement.operator in _NEGATIVE


class Requirements(dict[str, Requirement]):
    """Requirements by label key. ``add`` intersects; other methods never mutate."""

    @classmethod
    def from_selector(cls, expressions: Iterable[Mapping[str, Any]]) -> Requirements:
        """From node selector requirements (``matchExpressions`` or a NodePool's ``requirements``)."""
        result = cls()
        for expression in expressions:
            result.add(
                Requirement.of(
                    str(expression["key"]),
                    str(expression["operator"]),
                    [str(v) for v in expression.get("values") or ()],
                    expression.get("minValues"),
                )
            )
        return result

    @classmethod
    def from_labels(cls, labels: Mapping[str, str]) -> Requirements:
        result = cls()
        for key, value in labels.items():
            result.add(Requirement.of(key, IN, (value,)))
        return result

    def add(self, *requirements: Requirement) -> None:
        for requirement in requirements:
            existing = self.get(requirement.key)
            self[requirement.key] = requirement if existing is None else existing.intersection(requirement)

    def merged(self, other: Mapping[str, Requirement]) -> Requirements:
        """A copy of these requirements with ``other``'s added."""
        result = Requirements(self)
        for key, requirement in other.items():
            existing = result.get(key)
            result[key] = requirement if existing is None else existing.intersection(requirement)
        return result

    def conflict(self, other: Mapping[str, Requirement]) -> str | None:
        """The first key on which the two have no common value (where a node lacking the label would not
        satisfy both), or None: Karpenter's ``Intersects``. Keys in only one side never conflict."""
        small, large = (self, other) if len(self) <= len(other) else (other, self)
        for key in small:
            if key not in large:
                continue
            mine, theirs = self[key], other[key]
            if mine.has_intersection(theirs):
                continue
            if theirs.operator in _NEGATIVE and mine.operator in _NEGATIVE:
                continue
            return key
        return None

    def incompatibility(self, other: Mapping[str, Requirement], allow_undefined: frozenset[str]) -> str | None:
        """Why ``other`` (say, a pod's requirements) cannot be met here, or None (Karpenter's ``Compatible``).

        A key ``other`` constrains positively must be defined here unless it is in ``allow_undefined``
        (the well-known labels a node gets from its instance type); defined keys must intersect."""
        for key, requirement in other.items():
            if key in self or key in allow_undefined or requirement.operator in _NEGATIVE:
                continue
            return f"label {key!r} does not have known values"
        conflict = self.conflict(other)
        if conflict is None:
            return None
        return f"key {conflict}, {other[conflict]!r} not in {self[conflict]!r}"

    def to_selector(self, exclude: frozenset[str] = frozenset()) -> list[dict[str, Any]]:
        """Node selector requirements, sorted by key for stable output."""
        return [s for key in sorted(self) if key not in exclude for s in self[key].to_selector()]

    def __repr__(self) -> str:
        return ", ".join(repr(self[key]) for key in sorted(self))
