"""Strategies shared by the fuzz tests: JSON of any shape, and mutations of real samples (drop a field, swap a
value for a wrong type or a random string) that keep most of a sample intact, so that the search gets past the
outer checks and into the deep ones."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

# Strings that tend to break parsers: empty, whitespace, unicode, numbers and durations in words, huge ones.
TRICKY_TEXT = st.sampled_from(
    ["", " ", "0", "-1", "1e309", "NaN", "null", "true", "i-", "Never", "720h", "1.5Gi", "\x00", "é", "🚀", "a" * 300]
)
TEXT = st.text(max_size=20) | TRICKY_TEXT
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | TEXT
)
JSON: st.SearchStrategy[Any] = st.recursive(
    SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(TEXT, children, max_size=5),
    max_leaves=25,
)
JSON_OBJECTS = st.dictionaries(TEXT, JSON, max_size=6)
# JSON nested past Python's recursion limit (json.loads raises RecursionError, not ValueError) and just below it.
DEEP_JSON_TEXT = st.sampled_from(
    ["[" * 5_000 + "]" * 5_000, '{"a":' * 5_000 + "1" + "}" * 5_000, "[" * 900 + "]" * 900]
)

Path = tuple[str | int, ...]


def paths(document: Any, prefix: Path = ()) -> list[Path]:
    """Every path to a value inside ``document`` (maps and lists), the document itself first."""
    found = [prefix]
    if isinstance(document, dict):
        for key, value in document.items():
            found += paths(value, (*prefix, key))
    elif isinstance(document, list):
        for index, value in enumerate(document):
            found += paths(value, (*prefix, index))
    return found


def _apply(document: Any, path: Path, change: Callable[[Any, str | int], None]) -> Any:
    if not path:
        return document
    parent = document
    for part in path[:-1]:
        parent = parent[part]
    change(parent, path[-1])
    return document


@st.composite
def mutated(draw: st.DrawFn, sample: Any, max_mutations: int = 3) -> Any:
    """``sample`` (deep-copied) with one to ``max_mutations`` edits: a value dropped, replaced by random JSON
    or a tricky string, or a map given an extra random key."""
    document = copy.deepcopy(sample)
    for _ in range(draw(st.integers(1, max_mutations))):
        candidates = paths(document)
        path = draw(st.sampled_from(candidates))
        action = draw(st.sampled_from(["drop", "replace", "text", "extra"]))
        if not path:  # the root: replace the whole document now and then
            if action == "replace":
                document = draw(JSON)
            continue
        if action == "drop":

            def drop(parent: Any, key: str | int) -> None:
                del parent[key]

            document = _apply(document, path, drop)
        elif action in ("replace", "text"):
            value = draw(JSON if action == "replace" else TEXT)

            def put(parent: Any, key: str | int, value: Any = value) -> None:
                parent[key] = value

            document = _apply(document, path, put)
        else:
            key, value = draw(TEXT), draw(JSON)

            def extra(parent: Any, at: str | int, key: str = key, value: Any = value) -> None:
                if isinstance(parent[at], dict):
                    parent[at][key] = value

            document = _apply(document, path, extra)
    return document
