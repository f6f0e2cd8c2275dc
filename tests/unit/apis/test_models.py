"""The v1 models read and write Kubernetes objects without loss, apply Karpenter's defaults, and enforce
the update rules."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from autoscaler.apis.v1 import EC2NodeClass, NodeClaim, NodePool
from autoscaler.apis.validation import parse, validate_update
from autoscaler.manifests import load_documents
from tests.unit.apis.crd_eval import cel_failures
from tests.unit.apis.test_validation_corpus import BASES

MANIFESTS = Path(__file__).parents[3] / "events" / "manifests"
DOCUMENTS = load_documents([MANIFESTS])


def contains(outer: Any, inner: Any) -> bool:
    """Every field of ``inner`` is in ``outer`` with the same value (defaults may add more)."""
    if isinstance(inner, dict):
        return isinstance(outer, dict) and all(k in outer and contains(outer[k], v) for k, v in inner.items())
    if isinstance(inner, list):
        return isinstance(outer, list) and len(inner) == len(outer) and all(map(contains, outer, inner))
    return bool(outer == inner)


@pytest.mark.parametrize("document", DOCUMENTS, ids=[d.origin.split("/")[-1] for d in DOCUMENTS])
def test_manifest_round_trip_loses_nothing(document: Any) -> None:
    obj = parse(document.body)
    stored = obj.to_dict()
    assert contains(stored, document.body)
    assert parse(stored).to_dict() == stored  # a second pass changes nothing


def test_the_sample_manifests_cover_every_kind_listed_in_the_docs() -> None:
    names = {d.origin.split("/")[-1].split("#")[0] for d in DOCUMENTS}
    for expected in (
        "general-purpose",
        "spot",
        "bottlerocket",
        "al2023-custom-userdata",
        "windows-2022",
        "custom-family-with-alias",
        "min-values",
        "multiple-ebs",
        "instance-store-raid0",
        "kubelet-settings",
        "disruption-budgets",
    ):
        assert f"{expected}.yaml" in names


def test_nodepool_defaults_are_karpenters() -> None:
    nodepool = parse(BASES["nodepool"])
    assert isinstance(nodepool, NodePool)
    spec = nodepool.to_dict()["spec"]
    assert spec["disruption"] == {
        "consolidateAfter": "0s",
        "consolidationPolicy": "WhenEmptyOrUnderutilized",
        "budgets": [{"nodes": "10%"}],
    }
    assert spec["template"]["spec"]["expireAfter"] == "720h"
    assert "weight" not in spec and "terminationGracePeriod" not in spec["template"]["spec"]


def test_disruption_defaults_inside_a_given_disruption() -> None:
    body = copy.deepcopy(BASES["nodepool"])
    body["spec"]["disruption"] = {"consolidateAfter": "1m", "consolidationPolicy": "WhenEmpty"}
    disruption = parse(body).to_dict()["spec"]["disruption"]
    assert disruption["budgets"] == [{"nodes": "10%"}]
    body["spec"]["disruption"]["budgets"] = [{"nodes": "1", "reasons": ["Empty"]}]
    assert parse(body).to_dict()["spec"]["disruption"]["budgets"] == [{"nodes": "1", "reasons": ["Empty"]}]


def test_ec2nodeclass_imds_defaults_to_hop_limit_one_and_tokens_required() -> None:
    nodeclass = parse(BASES["nodeclass"])
    assert nodeclass.to_dict()["spec"]["metadataOptions"] == {
        "httpEndpoint": "enabled",
        "httpProtocolIPv6": "disabled",
        "httpPutResponseHopLimit": 1,
        "httpTokens": "required",
    }
    body = copy.deepcopy(BASES["nodeclass"])
    body["spec"]["metadataOptions"] = {"httpPutResponseHopLimit": 2}
    options = parse(body).to_dict()["spec"]["metadataOptions"]
    assert options["httpPutResponseHopLimit"] == 2 and options["httpTokens"] == "required"


def test_public_ip_association_is_only_what_the_user_wrote() -> None:
    assert "associatePublicIPAddress" not in parse(BASES["nodeclass"]).to_dict()["spec"]
    body = copy.deepcopy(BASES["nodeclass"])
    body["spec"]["associatePublicIPAddress"] = False
    assert parse(body).to_dict()["spec"]["associatePublicIPAddress"] is False


@pytest.mark.parametrize(
    ("terms", "family", "resolved"),
    [
        ([{"alias": "al2023@latest"}], None, "AL2023"),
        ([{"alias": "bottlerocket@v1.20.0"}], None, "Bottlerocket"),
        ([{"alias": "windows2025@latest"}], None, "Windows2025"),
        ([{"alias": "al2@latest"}], "Custom", "Custom"),
        ([{"id": "ami-0abc"}], "AL2", "AL2"),
    ],
)
def test_ami_family_resolves_from_the_alias(terms: list[dict[str, str]], family: str | None, resolved: str) -> None:
    body = copy.deepcopy(BASES["nodeclass"])
    body["spec"]["amiSelectorTerms"] = terms
    if family:
        body["spec"]["amiFamily"] = family
    nodeclass = parse(body)
    assert isinstance(nodeclass, EC2NodeClass)
    assert nodeclass.spec.resolved_ami_family == resolved


def test_status_written_by_a_newer_controller_is_kept() -> None:
    body = copy.deepcopy(BASES["nodeclass"])
    body["status"] = {
        "subnets": [{"id": "subnet-1", "zone": "us-east-1a", "zoneID": "use1-az1"}],
        "placementGroups": [{"id": "pg-1"}],  # a field no Karpenter release has (yet)
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "reason": "Ready",
                "message": "",
                "lastTransitionTime": "2026-11-30T00:00:00Z",
                "observedGeneration": 3,
            }
        ],
    }
    body["metadata"]["managedFields"] = [{"manager": "kubectl"}]
    stored = parse(body).to_dict()
    assert stored["status"]["placementGroups"] == [{"id": "pg-1"}]
    assert stored["status"]["conditions"][0]["observedGeneration"] == 3
    assert stored["metadata"]["managedFields"] == [{"manager": "kubectl"}]


def test_nodeclaim_spec_is_immutable() -> None:
    old = parse(BASES["nodeclaim"])
    assert isinstance(old, NodeClaim)
    changed = copy.deepcopy(BASES["nodeclaim"])
    changed["spec"]["taints"] = [{"key": "dedicated", "effect": "NoSchedule"}]
    new = parse(changed)
    errors = validate_update(old, new)
    assert [(e.path, e.message) for e in errors] == [("spec", 'Invalid value: "object": spec is immutable')]
    assert ("spec", "spec is immutable") in cel_failures("NodeClaim", changed, old=BASES["nodeclaim"])
    relabelled = copy.deepcopy(BASES["nodeclaim"])
    relabelled["metadata"]["labels"] = {"team": "a"}
    relabelled["status"] = {"nodeName": "node-1"}
    assert validate_update(old, parse(relabelled)) == []
    assert cel_failures("NodeClaim", relabelled, old=BASES["nodeclaim"]) == []
