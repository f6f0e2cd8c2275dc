"""The committed CRDs are exactly what the models generate, and serve Karpenter's names and columns."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from autoscaler.crds.generate import CRD_KINDS, crd_manifest
from autoscaler.crds.render import render

COMMITTED = Path(__file__).parents[2] / "infra" / "manifests" / "crds"


@pytest.mark.parametrize("crd", CRD_KINDS, ids=[c.kind for c in CRD_KINDS])
def test_committed_crd_is_up_to_date(crd: Any) -> None:
    path = COMMITTED / f"{crd.group}_{crd.plural}.yaml"
    assert path.read_text() == render(crd), "run `make crds` and commit the result"


def _walk(node: Any) -> list[dict[str, Any]]:
    if isinstance(node, dict):
        return [node, *(n for child in node.values() for n in _walk(child))]
    if isinstance(node, list):
        return [n for child in node for n in _walk(child)]
    return []


@pytest.mark.parametrize("crd", CRD_KINDS, ids=[c.kind for c in CRD_KINDS])
def test_schema_is_structural(crd: Any) -> None:
    schema = crd_manifest(crd)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    for node in _walk(schema):
        assert "$ref" not in node and "title" not in node and "const" not in node
        assert {"type": "null"} not in node.get("anyOf", [])
        if "properties" in node:
            assert node["type"] == "object" and "additionalProperties" not in node


def columns(kind: str) -> list[tuple[str, int]]:
    crd = next(c for c in CRD_KINDS if c.kind == kind)
    version = crd_manifest(crd)["spec"]["versions"][0]
    return [(c["name"], c.get("priority", 0)) for c in version["additionalPrinterColumns"]]


def test_printer_columns_match_karpenter_v1_14() -> None:
    assert columns("EC2NodeClass") == [("Ready", 0), ("Age", 0), ("Role", 1)]
    assert columns("NodePool") == [
        ("NodeClass", 0),
        ("Nodes", 0),
        ("Ready", 0),
        ("Age", 0),
        ("Weight", 1),
        ("CPU", 1),
        ("Memory", 1),
    ]
    assert columns("NodeClaim") == [
        ("Type", 0),
        ("Capacity", 0),
        ("Zone", 0),
        ("Node", 0),
        ("Ready", 0),
        ("Age", 0),
        ("ImageID", 1),
        ("ID", 1),
        ("NodePool", 1),
        ("NodeClass", 1),
        ("Drifted", 1),
    ]
    assert columns("NodeOverlay") == [("Ready", 0), ("Age", 0), ("Weight", 1)]
    assert columns("CapacityBuffer") == [
        ("Strategy", 0),
        ("PodTemplate", 0),
        ("Replicas", 0),
        ("ConditionsType", 0),
        ("ConditionsStatus", 0),
        ("ConditionsReason", 0),
        ("Age", 0),
    ]
    nodepool = next(c for c in CRD_KINDS if c.kind == "NodePool")
    assert nodepool.printer_columns[1]["jsonPath"] == ".status.nodes"  # v1.0 read .status.resources.nodes


def test_names_scope_and_status_subresource() -> None:
    manifests = {c.kind: crd_manifest(c) for c in CRD_KINDS}
    assert manifests["EC2NodeClass"]["metadata"]["name"] == "ec2nodeclasses.karpenter.k8s.aws"
    assert manifests["EC2NodeClass"]["spec"]["names"]["shortNames"] == ["ec2nc", "ec2ncs"]
    for kind in ("EC2NodeClass", "NodePool", "NodeClaim"):
        manifest = manifests[kind]
        assert manifest["spec"]["scope"] == "Cluster"
        assert manifest["spec"]["names"]["categories"] == ["karpenter"]
        version = manifest["spec"]["versions"][0]
        assert version["name"] == "v1" and version["storage"] and version["served"]
        assert version["subresources"]["status"] == {}
    assert manifests["NodePool"]["spec"]["versions"][0]["subresources"]["scale"] == {
        "specReplicasPath": ".spec.replicas",
        "statusReplicasPath": ".status.nodes",
    }
    assert manifests["NodeClaim"]["spec"]["versions"][0]["subresources"] == {"status": {}}
    overlay, buffer = manifests["NodeOverlay"]["spec"], manifests["CapacityBuffer"]["spec"]
    assert (overlay["group"], overlay["versions"][0]["name"], overlay["scope"]) == (
        "karpenter.sh",
        "v1alpha1",
        "Cluster",
    )
    assert overlay["names"]["shortNames"] == ["overlays"] and overlay["names"]["categories"] == ["karpenter"]
    assert (buffer["group"], buffer["versions"][0]["name"], buffer["scope"]) == (
        "autoscaling.x-k8s.io",
        "v1beta1",
        "Namespaced",
    )
    assert buffer["names"]["shortNames"] == ["cb"] and buffer["names"]["categories"] == ["autoscaling"]


def test_crd_defaults_match_the_models() -> None:
    nodepool = yaml.safe_load(render(CRD_KINDS[1]))["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    spec = nodepool["properties"]["spec"]["properties"]
    assert spec["disruption"]["default"] == {"consolidateAfter": "0s"}
    assert spec["disruption"]["properties"]["budgets"]["default"] == [{"nodes": "10%"}]
    assert spec["template"]["properties"]["spec"]["properties"]["expireAfter"]["default"] == "720h"
    nodeclass = yaml.safe_load(render(CRD_KINDS[0]))["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    options = nodeclass["properties"]["spec"]["properties"]["metadataOptions"]
    assert options["default"]["httpPutResponseHopLimit"] == 1
    assert nodeclass["properties"]["spec"]["required"] == [
        "subnetSelectorTerms",
        "securityGroupSelectorTerms",
        "amiSelectorTerms",
    ]
