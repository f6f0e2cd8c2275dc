"""The v1beta1 models accept what Karpenter v0.37 served, apply its defaults, and reject what it rejected; the
v1beta1 schema of the conversion CRDs (CEL and OpenAPI) agrees with them on every case."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from autoscaler.apis.conversion import SERVED_KINDS
from autoscaler.apis.v1beta1 import EC2NodeClass, NodePool
from autoscaler.apis.validation import InvalidObjectError, parse
from autoscaler.crds.generate import CONVERTED_KINDS
from tests.unit.apis.crd_eval import cel_failures, schema_failures, schema_for

TERMS = [{"tags": {"karpenter.sh/discovery": "demo"}}]
BASES: dict[str, dict[str, Any]] = {
    "nodeclass": {
        "apiVersion": "karpenter.k8s.aws/v1beta1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "default"},
        "spec": {"amiFamily": "AL2", "role": "R", "subnetSelectorTerms": TERMS, "securityGroupSelectorTerms": TERMS},
    },
    "nodepool": {
        "apiVersion": "karpenter.sh/v1beta1",
        "kind": "NodePool",
        "metadata": {"name": "default"},
        "spec": {
            "template": {
                "spec": {
                    "requirements": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}],
                    "nodeClassRef": {"name": "default"},
                }
            }
        },
    },
    "nodeclaim": {
        "apiVersion": "karpenter.sh/v1beta1",
        "kind": "NodeClaim",
        "metadata": {"name": "default-x"},
        "spec": {
            "requirements": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}],
            "nodeClassRef": {"name": "default"},
            "kubelet": {"maxPods": 20},
        },
    },
}

# (case, base, changes at dotted paths, expected error: (path, words) or None for valid)
CASES: list[tuple[str, str, dict[str, Any], tuple[str, str] | None]] = [
    ("amiFamily is required", "nodeclass", {"spec.amiFamily": None}, ("spec.amiFamily", "Required value")),
    ("Ubuntu is a family", "nodeclass", {"spec.amiFamily": "Ubuntu"}, None),
    ("no alias family", "nodeclass", {"spec.amiFamily": "Windows2025"}, ("spec.amiFamily", "Unsupported value")),
    ("terms are optional", "nodeclass", {"spec.amiFamily": "AL2023"}, None),
    (
        "Custom needs terms",
        "nodeclass",
        {"spec.amiFamily": "Custom"},
        ("spec", "amiSelectorTerms is required when amiFamily == 'Custom'"),
    ),
    ("Custom with terms", "nodeclass", {"spec.amiFamily": "Custom", "spec.amiSelectorTerms": [{"id": "ami-1"}]}, None),
    (
        "no alias term",
        "nodeclass",
        {"spec.amiSelectorTerms": [{"alias": "al2023@latest"}]},
        ("spec.amiSelectorTerms[0].alias", "unknown field"),
    ),
    (
        "a term needs tags, id or name",
        "nodeclass",
        {"spec.amiSelectorTerms": [{"owner": "self"}]},
        ("spec.amiSelectorTerms", "expected at least one, got none, ['tags', 'id', 'name']"),
    ),
    (
        "id stands alone",
        "nodeclass",
        {"spec.amiSelectorTerms": [{"id": "ami-1", "owner": "self"}]},
        ("spec.amiSelectorTerms", "'id' is mutually exclusive"),
    ),
    (
        "managed-by is a restricted tag",
        "nodeclass",
        {"spec.tags": {"karpenter.sh/managed-by": "demo"}},
        ("spec.tags", "restricted tag matching karpenter.sh/managed-by"),
    ),
    ("the cluster-name tag is the user's", "nodeclass", {"spec.tags": {"eks:eks-cluster-name": "demo"}}, None),
    ("no kubelet on a class", "nodeclass", {"spec.kubelet": {"maxPods": 1}}, ("spec.kubelet", "unknown field")),
    (
        "role or instanceProfile",
        "nodeclass",
        {"spec.instanceProfile": "P"},
        ("spec", "must specify exactly one of ['role', 'instanceProfile']"),
    ),
    (
        "consolidateAfter needs WhenEmpty",
        "nodepool",
        {"spec.disruption": {"consolidateAfter": "30s"}},
        ("spec.disruption", "consolidateAfter cannot be combined with consolidationPolicy=WhenUnderutilized"),
    ),
    ("Never may go with WhenUnderutilized", "nodepool", {"spec.disruption": {"consolidateAfter": "Never"}}, None),
    (
        "WhenEmpty needs consolidateAfter",
        "nodepool",
        {"spec.disruption": {"consolidationPolicy": "WhenEmpty"}},
        ("spec.disruption", "consolidateAfter must be specified with consolidationPolicy=WhenEmpty"),
    ),
    (
        "no WhenEmptyOrUnderutilized",
        "nodepool",
        {"spec.disruption": {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "0s"}},
        ("spec.disruption.consolidationPolicy", "Unsupported value"),
    ),
    (
        "no budget reasons",
        "nodepool",
        {"spec.disruption": {"budgets": [{"nodes": "1", "reasons": ["Drifted"]}]}},
        ("spec.disruption.budgets[0].reasons", "unknown field"),
    ),
    (
        "schedule with duration",
        "nodepool",
        {"spec.disruption": {"budgets": [{"nodes": "1", "schedule": "@daily"}]}},
        ("spec.disruption.budgets", "'schedule' must be set with 'duration'"),
    ),
    (
        "no expireAfter in the template",
        "nodepool",
        {"spec.template.spec.expireAfter": "1h"},
        ("spec.template.spec.expireAfter", "unknown field"),
    ),
    (
        "no Gte operator",
        "nodepool",
        {"spec.template.spec.requirements": [{"key": "a", "operator": "Gte", "values": ["1"]}]},
        ("spec.template.spec.requirements[0].operator", "Unsupported value"),
    ),
    (
        "Gt takes one integer",
        "nodepool",
        {"spec.template.spec.requirements": [{"key": "a", "operator": "Gt", "values": ["x"]}]},
        ("spec.template.spec.requirements", "requirements operator 'Gt' or 'Lt' must have a single positive integer"),
    ),
    ("empty template resources", "nodepool", {"spec.template.spec.resources": {}}, None),
    (
        "template resources stay empty",
        "nodepool",
        {"spec.template.spec.resources": {"requests": {"cpu": "1"}}},
        ("spec.template.spec.resources.requests", "unknown field"),
    ),
    ("nodeClassRef needs only a name", "nodepool", {"spec.template.spec.nodeClassRef": {"name": "x"}}, None),
    (
        "kubelet rules hold in v1beta1",
        "nodepool",
        {"spec.template.spec.kubelet": {"imageGCHighThresholdPercent": 50, "imageGCLowThresholdPercent": 60}},
        ("spec.template.spec.kubelet", "imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent"),
    ),
    (
        "NodeClaim requirements",
        "nodeclaim",
        {"spec.requirements": [{"key": "a", "operator": "In", "values": []}]},
        ("spec.requirements", "requirements with operator 'In' must have a value defined"),
    ),
]


def build(base: str, changes: dict[str, Any]) -> dict[str, Any]:
    document = copy.deepcopy(BASES[base])
    for path, value in changes.items():
        *parents, leaf = path.split(".")
        target = document
        for part in parents:
            target = target.setdefault(part, {})
        if value is None:
            del target[leaf]
        else:
            target[leaf] = value
    return document


@pytest.mark.parametrize(("case", "base", "changes", "error"), CASES, ids=[c[0] for c in CASES])
def test_case(case: str, base: str, changes: dict[str, Any], error: tuple[str, str] | None) -> None:
    document = build(base, changes)
    kind = document["kind"]
    try:
        stored = parse(document, SERVED_KINDS).to_dict()
        errors = []
    except InvalidObjectError as failure:
        errors = failure.errors
    if error is None:
        assert errors == []
        assert cel_failures(kind, stored, version="v1beta1") == []
        assert schema_failures(kind, stored, version="v1beta1") == []
        return
    path, words = error
    matching = [e for e in errors if e.path == path and words in e.message]
    assert matching, [str(e) for e in errors]
    if matching[0].rule.startswith(("self", "has(", "!")):  # a CEL rule: the served CRD rejects it the same way
        assert (path, matching[0].message.split(": ", 2)[-1]) in cel_failures(kind, document, version="v1beta1")


def test_every_v1beta1_only_rule_is_exercised() -> None:
    def messages(node: Any) -> set[str]:
        if isinstance(node, dict):
            own = {v["message"] for v in node.get("x-kubernetes-validations", [])}
            return own.union(*(messages(child) for child in node.values()))
        if isinstance(node, list):
            return set().union(*(messages(child) for child in node))
        return set()

    v1 = set().union(*(messages(schema_for(c.kind)) for c in CONVERTED_KINDS))
    v1beta1 = set().union(*(messages(schema_for(c.kind, "v1beta1")) for c in CONVERTED_KINDS))
    rejected = {m for _, base, changes, error in CASES if error for m in _cel_messages(build(base, changes))}
    assert sorted(v1beta1 - v1 - rejected) == []


def _cel_messages(document: dict[str, Any]) -> set[str]:
    return {message for _, message in cel_failures(document["kind"], document, version="v1beta1")}


def test_defaults_are_v0_37s() -> None:
    nodeclass = parse(BASES["nodeclass"], SERVED_KINDS)
    assert isinstance(nodeclass, EC2NodeClass)
    assert nodeclass.to_dict()["spec"]["metadataOptions"] == {
        "httpEndpoint": "enabled",
        "httpProtocolIPv6": "disabled",
        "httpPutResponseHopLimit": 2,
        "httpTokens": "required",
    }
    nodepool = parse(BASES["nodepool"], SERVED_KINDS)
    assert isinstance(nodepool, NodePool)
    assert nodepool.to_dict()["spec"]["disruption"] == {
        "consolidationPolicy": "WhenUnderutilized",
        "expireAfter": "720h",
        "budgets": [{"nodes": "10%"}],
    }
    v1beta1 = schema_for("EC2NodeClass", "v1beta1")["properties"]["spec"]["properties"]
    assert v1beta1["metadataOptions"]["default"]["httpPutResponseHopLimit"] == 2


def test_v1beta1_is_not_served_by_the_default_parse() -> None:
    # Functions act on v1 only: a v1beta1 object reaches them converted, never as it is.
    with pytest.raises(InvalidObjectError, match=r"no kind.*convert v1beta1 manifests with `autoscaler convert`"):
        parse(BASES["nodepool"])
