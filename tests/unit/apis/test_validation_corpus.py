"""Every validation rule of the API, failing and passing (corpus.yaml), checked three ways:

1. our Python validation reports the expected path and message (for runtime validation: admits the object and
   ``runtime_errors`` reports it; for an update: ``validate_update`` reports it);
2. the generated CRD agrees: its CEL rules (evaluated with cel-python) or its OpenAPI schema (evaluated
   with jsonschema) reject the same object for the same reason, and accept every valid case;
3. every CEL rule in the CRDs is exercised by at least one failing case and evaluated on some admitted one.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from autoscaler.apis.validation import FieldError, InvalidObjectError, parse, runtime_errors, validate_update
from autoscaler.crds.generate import CRD_KINDS
from tests.support import manifests
from tests.unit.apis.conversion_cases import changed
from tests.unit.apis.crd_eval import cel_failures, schema_failures, schema_for
from tools.crd_eval import cel_rules_applied

BASES: dict[str, dict[str, Any]] = {
    "nodeclass": manifests.nodeclass(discovery="demo"),
    "nodepool": manifests.nodepool(),
    "nodeclaim": {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {"name": "default-abcde"},
        "spec": {
            "requirements": [{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.large"]}],
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
        },
    },
    "nodeoverlay": {
        "apiVersion": "karpenter.sh/v1alpha1",
        "kind": "NodeOverlay",
        "metadata": {"name": "discount-m7i"},
        "spec": {"requirements": [{"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["m7i"]}]},
    },
    "capacitybuffer": {
        "apiVersion": "autoscaling.x-k8s.io/v1beta1",
        "kind": "CapacityBuffer",
        "metadata": {"name": "spare", "namespace": "default"},
        "spec": {"podTemplateRef": {"name": "buffer-chunk"}, "replicas": 2},
    },
}
CASES: list[dict[str, Any]] = yaml.safe_load((Path(__file__).parent / "corpus.yaml").read_text())
OPENAPI_RULES = (
    "pattern",
    "enum",
    "maximum",
    "minimum",
    "maxLength",
    "minLength",
    "minItems",
    "maxItems",
    "required",
    "type",
)


def _apply(document: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """``document`` with each dotted path set to its value (a null value removes the field)."""
    return changed(document, **{path.replace(".", "__"): value for path, value in changes.items()})


def build(case: dict[str, Any]) -> dict[str, Any]:
    document = copy.deepcopy(BASES[case["base"]])
    for path in case.get("unset", []):
        *parents, leaf = path.split(".")
        target = document
        for part in parents:
            target = target[part]
        del target[leaf]
    return _apply(document, case.get("set", {}))


def updated(case: dict[str, Any]) -> dict[str, Any]:
    return _apply(build(case), copy.deepcopy(case["update"]))


def errors_of(document: dict[str, Any]) -> list[FieldError]:
    try:
        parse(document)
    except InvalidObjectError as error:
        return error.errors
    return []


def _dotted(path: str) -> str:
    return re.sub(r"\[([^\]]+)\]", r".\1", path)


def _update_case(case: dict[str, Any]) -> None:
    old, new = build(case), updated(case)
    kind = new["kind"]
    errors = validate_update(parse(old), parse(new))
    if "error" not in case:
        assert errors == []
        assert cel_failures(kind, new, old=old) == []
        return
    path, words = case["error"]
    assert [e for e in errors if e.path == path and words in e.message], [str(e) for e in errors]
    assert (path, words) in cel_failures(kind, new, old=old)


def _runtime_case(case: dict[str, Any], document: dict[str, Any]) -> None:
    path, words = case["warning"]
    found = runtime_errors(parse(document))
    assert [e for e in found if e.path == path and words in e.message], [str(e) for e in found]


@pytest.mark.parametrize("case", CASES, ids=[c["case"] for c in CASES])
def test_case(case: dict[str, Any]) -> None:
    if "update" in case:
        _update_case(case)
        return
    document = build(case)
    errors = errors_of(document)
    kind = document["kind"]
    if "error" not in case:
        assert errors == [], f"expected valid, got: {[str(e) for e in errors]}"
        stored = parse(document).to_dict()
        assert cel_failures(kind, stored) == []
        assert schema_failures(kind, stored) == []
        if "warning" in case:
            _runtime_case(case, document)
        else:
            assert runtime_errors(parse(document)) == []
        return

    path, words = case["error"]
    matching = [e for e in errors if e.path == path and words in e.message]
    assert matching, f"no error at {path!r} with {words!r}; got: {[str(e) for e in errors]}"
    error = matching[0]
    if error.rule.startswith(("self", "has(", "!")):  # a CEL rule: the CRD must reject it the same way
        assert (path, error.message.split(": ", 2)[-1]) in cel_failures(kind, document)
    elif error.rule.split(" ")[0] in OPENAPI_RULES and path and not path.startswith("metadata"):
        assert any(
            _dotted(path).startswith(p) or p.startswith(_dotted(path)) for p, _ in schema_failures(kind, document)
        ), schema_failures(kind, document)


def _cel_messages(node: Any) -> list[str]:
    if isinstance(node, dict):
        own = [v["message"] for v in node.get("x-kubernetes-validations", [])]
        return own + [m for child in node.values() for m in _cel_messages(child)]
    if isinstance(node, list):
        return [m for child in node for m in _cel_messages(child)]
    return []


def test_every_cel_rule_rejects_some_case_and_admits_another() -> None:
    # NodePool and NodeClaim share their requirement rules: a rule counts as tested once, for any kind.
    rules = {m for crd in CRD_KINDS for m in _cel_messages(schema_for(crd.kind))}
    served = {crd.kind for crd in CRD_KINDS}
    rejected: set[str] = set()
    applied: set[str] = set()
    for case in CASES:
        document = build(case)
        kind = document["kind"]
        if kind not in served:
            continue
        old, new = (document, updated(case)) if "update" in case else (None, document)
        if "error" in case:
            rejected |= {message for _, message in cel_failures(kind, new, old=old)}
        else:
            stored = parse(new).to_dict()
            applied |= cel_rules_applied(schema_for(kind), stored, old=parse(old).to_dict() if old else None)
    assert sorted(rules - rejected) == []
    assert sorted(rules - applied) == []


def test_corpus_cases_are_unique() -> None:
    names = [c["case"] for c in CASES]
    assert len(names) == len(set(names))
