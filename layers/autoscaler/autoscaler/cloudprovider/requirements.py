"""Whether a set of node labels satisfies node selector requirements. Pure.

Used by cloud providers to match NodeClaim requirements against an instance type's labels (and an
offering's zone and capacity type), and AMI requirements against instance types. A requirement on a
key the labels do not model (a NodePool's own label, say) is satisfied by the node's labels rather
than by the instance type, so it is ignored unless the key is one of ``known_keys``.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Protocol


class Requirement(Protocol):
    @property
    def key(self) -> str: ...

    @property
    def operator(self) -> str: ...

    @property
    def values(self) -> Sequence[str] | None: ...


def _as_int(value: str) -> int | None:
    try:
        return int(value)
    except ValueError:
        return None


def satisfies(value: str | None, operator: str, values: Sequence[str] | None) -> bool:
    """One requirement against one label value (None when the label is absent)."""
    allowed = values or ()
    if operator == "In":
        return value is not None and value in allowed
    if operator == "NotIn":
        return value is None or value not in allowed
    if operator == "Exists":
        return value is not None
    if operator == "DoesNotExist":
        return value is None
    number, bound = (_as_int(value) if value is not None else None), (_as_int(allowed[0]) if allowed else None)
    if number is None or bound is None:
        return False
    return {"Gt": number > bound, "Lt": number < bound, "Gte": number >= bound, "Lte": number <= bound}.get(
        operator, False
    )


def compatible(
    labels: Mapping[str, str], requirements: Iterable[Requirement], known_keys: Collection[str] | None = None
) -> bool:
    """True when ``labels`` satisfy every requirement whose key is known (``known_keys``, or every key when
    None). A known key missing from ``labels`` counts as absent: ``In`` fails, ``NotIn`` holds."""
    return all(
        satisfies(labels.get(r.key), r.operator, r.values)
        for r in requirements
        if known_keys is None or r.key in known_keys
    )


def allowed_values(requirements: Iterable[Requirement], key: str, universe: Iterable[str]) -> list[str]:
    """The values of ``universe`` (in order) that every requirement on ``key`` admits."""
    relevant = [r for r in requirements if r.key == key]
    return [v for v in universe if all(satisfies(v, r.operator, r.values) for r in relevant)]
