"""Fuzz manifest validation: ``autoscaler.apis.validation.parse`` over mutations of events/manifests/*.yaml.

Dropped fields, wrong types, random strings in enums, durations and quantities: each mutated manifest is a
model or an InvalidObjectError listing at least one FieldError, every one with a message and, below the
object's root, the JSON path of the field at fault; never another exception. A model's runtime validation
(``runtime_errors``) likewise answers with sentences, never an exception.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from hypothesis import given
from hypothesis import strategies as st

from autoscaler.apis.rules import ApiModel
from autoscaler.apis.validation import InvalidObjectError, parse, runtime_errors
from tests.fuzz.budget import fuzz
from tests.fuzz.strategies import TRICKY_TEXT, mutated, paths

MANIFESTS = [
    document
    for path in sorted((Path(__file__).parents[2] / "events" / "manifests").glob("*.yaml"))
    for document in yaml.safe_load_all(path.read_text())
    if document
]
# What a user mistypes in the string fields that carry a grammar.
GRAMMAR = (
    st.sampled_from(
        [
            "720h",
            "1h30m",
            "Never",
            "never",
            "-1h",
            "1.5h",
            "10",
            "100Gi",
            "1.5",
            "1e3",
            "0x10",
            "+1",
            "1Ki ",
            "In",
            "Exists",
            "Gt",
            "WhenEmpty",
            "WhenEmptyOrUnderutilized",
            "Balanced",
            "efa-only",
            "-10%",
            "+0.5",
            "cr-0abc",
            "reserved",
            "100%",
            "101%",
            "@latest",
            "al2023@",
            "spot",
        ]
    )
    | TRICKY_TEXT
)


@st.composite
def retyped(draw: st.DrawFn, document: Any) -> Any:
    """``document`` mutated (see ``mutated``), and perhaps one string value swapped for a grammar-laden one."""
    document = draw(mutated(document))
    strings = [p for p in paths(document) if p and isinstance(_at(document, p), str)]
    swap = draw(st.booleans())
    if strings and swap:
        path = draw(st.sampled_from(strings))
        parent = _at(document, path[:-1])
        parent[path[-1]] = draw(GRAMMAR)
    return document


def _at(document: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        document = document[part]
    return document


ROOT_RULES = ("kind", "type object")  # a document that is no object of ours has no field to name


@fuzz(400)
@given(st.sampled_from(MANIFESTS).flatmap(retyped))
def test_a_mutated_manifest_is_a_model_or_names_the_field(document: Any) -> None:
    """Every mutated manifest parses, or is rejected with an InvalidObjectError whose errors each carry a
    message and, unless the whole document is at fault, a field path; never another exception."""
    try:
        model = parse(document)
    except InvalidObjectError as error:
        assert error.errors, error
        for field_error in error.errors:
            assert field_error.message.strip(), error
            assert field_error.path or field_error.rule in ROOT_RULES, error
        assert str(error).startswith(f'{error.kind} "{error.name}" is invalid: ')
        return
    assert isinstance(model, ApiModel)
    assert model.to_dict()["kind"] == document["kind"]
    for problem in runtime_errors(model):
        assert problem.message.strip() and problem.rule == "runtime validation"
