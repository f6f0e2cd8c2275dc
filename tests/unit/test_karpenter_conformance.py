"""The tools that hold us to a Karpenter release (tools/crd_walk.py, tools/karpenter_examples.py), and, when
Karpenter's files are at hand, the comparison itself.

Karpenter's CRDs and examples cannot be committed here. Point the environment at a release's folders to run the
comparison (otherwise those tests are skipped):

    KARPENTER_CRDS=/tmp/karpenter/pkg/apis/crds KARPENTER_EXAMPLES=/tmp/karpenter/examples \
        pytest tests/unit/test_karpenter_conformance.py
"""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import pytest

from autoscaler.crds.generate import CRD_KINDS
from autoscaler.manifests import load_documents
from tools import crd_walk, karpenter_examples

COMMITTED = Path(__file__).parents[2] / "infra" / "manifests" / "crds"
MANIFESTS = Path(__file__).parents[2] / "events" / "manifests"
KARPENTER_CRDS = os.environ.get("KARPENTER_CRDS")
KARPENTER_EXAMPLES = os.environ.get("KARPENTER_EXAMPLES")

CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com", "annotations": {"controller-gen.kubebuilder.io/version": "v0.20.1"}},
    "spec": {
        "group": "example.com",
        "names": {"kind": "Widget", "plural": "widgets"},
        "scope": "Cluster",
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "additionalPrinterColumns": [
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
                ],
                "schema": {
                    "openAPIV3Schema": {
                        "description": "A widget.",
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "required": ["size", "color"],
                                "properties": {
                                    "size": {"type": "integer", "minimum": 1, "description": "How big."},
                                    "color": {"type": "string", "enum": ["red", "blue"]},
                                    "description": {"type": "string"},
                                },
                                "x-kubernetes-validations": [{"rule": "self.size < 10", "message": "too big"}],
                            }
                        },
                    }
                },
            }
        ],
    },
}


def walk(ours: dict[str, Any], theirs: dict[str, Any]) -> list[str]:
    return crd_walk.walk({"w": ours}, {"w": theirs})["w"]


def test_the_walk_ignores_descriptions_stamps_and_the_order_of_required() -> None:
    ours = copy.deepcopy(CRD)
    schema = ours["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    schema["description"] = "Our own words."
    schema["properties"]["spec"]["properties"]["size"]["description"] = "Ours too."
    schema["properties"]["spec"]["required"] = ["color", "size"]
    del ours["metadata"]["annotations"]
    assert walk(ours, CRD) == []


def test_the_walk_reports_every_other_difference() -> None:
    ours = copy.deepcopy(CRD)
    version = ours["spec"]["versions"][0]
    spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["properties"]["size"]["minimum"] = 0
    spec["properties"]["color"]["enum"] = ["blue", "red"]
    del spec["properties"]["description"]  # a property named "description" is a property, not a text
    spec["properties"]["shape"] = {"type": "string"}
    spec["required"] = ["size"]
    spec["x-kubernetes-validations"][0]["message"] = "much too big"
    version["additionalPrinterColumns"][0]["priority"] = 1
    ours["spec"]["scope"] = "Namespaced"
    assert sorted(walk(ours, CRD)) == [
        "spec.scope: ours Namespaced, Karpenter's Cluster",
        "spec.versions.v1.additionalPrinterColumns[0].priority: only ours: 1",
        "v1 .spec.color.enum[0]: ours blue, Karpenter's red",
        "v1 .spec.color.enum[1]: ours red, Karpenter's blue",
        "v1 .spec.description: only Karpenter's: {type: string}",
        "v1 .spec.required: missing ['color']",
        "v1 .spec.shape: only ours: {type: string}",
        "v1 .spec.size.minimum: ours 0, Karpenter's 1",
        "v1 .spec.x-kubernetes-validations[0].message: ours much too big, Karpenter's too big",
    ]
    assert crd_walk.walk({}, {"w": CRD}) == {"w": ["only Karpenter serves this CRD"]}


def test_the_walk_of_our_committed_crds_against_themselves_is_clean(capsys: pytest.CaptureFixture[str]) -> None:
    assert crd_walk.main([str(COMMITTED), "--ours", str(COMMITTED)]) == 0
    assert f"{len(CRD_KINDS)} CRDs compared, 0 differences" in capsys.readouterr().out


def test_the_examples_tool_agrees_with_our_crds_on_our_samples(capsys: pytest.CaptureFixture[str]) -> None:
    documents = load_documents([MANIFESTS])
    judgements = karpenter_examples.judge_examples(documents, crd_walk.load_crds(COMMITTED))
    assert len(judgements) == len(documents) and all(j.agree for j in judgements)
    assert all(j.karpenter == [] for j in judgements)
    nodepool = copy.deepcopy(next(d for d in documents if d.body["kind"] == "NodePool"))
    nodepool.body["spec"]["weight"] = 0
    (judgement,) = karpenter_examples.judge_examples([nodepool], crd_walk.load_crds(COMMITTED))
    assert judgement.karpenter and judgement.ours is not None and not judgement.ours.valid and judgement.agree


@pytest.mark.skipif(KARPENTER_CRDS is None, reason="set KARPENTER_CRDS to a Karpenter release's pkg/apis/crds folder")
def test_our_crds_are_karpenters_but_for_descriptions() -> None:
    report = crd_walk.walk(crd_walk.load_crds(COMMITTED), crd_walk.load_crds(Path(str(KARPENTER_CRDS))))
    assert report == {crd.name: [] for crd in CRD_KINDS}


@pytest.mark.skipif(
    KARPENTER_EXAMPLES is None or KARPENTER_CRDS is None, reason="set KARPENTER_EXAMPLES and KARPENTER_CRDS"
)
def test_karpenters_examples_are_judged_as_its_crds_judge_them() -> None:
    documents = load_documents([Path(str(KARPENTER_EXAMPLES))])
    judgements = karpenter_examples.judge_examples(documents, crd_walk.load_crds(Path(str(KARPENTER_CRDS))))
    assert [j.subject for j in judgements if not j.agree] == []
    assert any(j.ours is not None for j in judgements)
