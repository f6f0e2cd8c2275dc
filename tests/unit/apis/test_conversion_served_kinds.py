"""Conversion and the kinds and fields Karpenter added after v1.0: v1beta1 objects still convert to this v1,
v1 objects with v1.14 fields go back to v1beta1 without what it cannot say, and the two single-version kinds
(NodeOverlay, CapacityBuffer) come back as they came, or not at all for another version."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from autoscaler.apis.conversion import ConversionError, convert
from autoscaler.apis.conversion.review import answer, parse_review
from tests.unit.apis.conversion_cases import (
    AWS_V1,
    AWS_V1BETA1,
    NODECLASS_V1BETA1,
    NODEPOOL_V1BETA1,
    V1,
    V1BETA1,
    changed,
    to_v1,
    to_v1beta1,
)

OVERLAY: dict[str, Any] = {
    "apiVersion": "karpenter.sh/v1alpha1",
    "kind": "NodeOverlay",
    "metadata": {"name": "cheaper-m7i"},
    "spec": {
        "requirements": [{"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["m7i"]}],
        "priceAdjustment": "-10%",
    },
}
BUFFER: dict[str, Any] = {
    "apiVersion": "autoscaling.x-k8s.io/v1beta1",
    "kind": "CapacityBuffer",
    "metadata": {"name": "spare", "namespace": "web"},
    "spec": {"scalableRef": {"apiGroup": "apps", "kind": "Deployment", "name": "web"}, "percentage": 20},
}


@pytest.mark.parametrize("document", [OVERLAY, BUFFER], ids=["NodeOverlay", "CapacityBuffer"])
def test_single_version_kinds_come_back_as_they_came(document: dict[str, Any]) -> None:
    assert convert(document, document["apiVersion"]) == document


@pytest.mark.parametrize(
    ("document", "desired", "words"),
    [
        (OVERLAY, V1, "cannot be converted to karpenter.sh/v1: NodeOverlay is served as karpenter.sh/v1alpha1"),
        (OVERLAY, V1BETA1, "NodeOverlay is served as karpenter.sh/v1alpha1"),
        (BUFFER, "autoscaling.x-k8s.io/v1", "cannot be converted to autoscaling.x-k8s.io/v1: serving"),
        (
            changed(NODEPOOL_V1BETA1),
            "karpenter.sh/v1alpha1",
            "NodePool is served as karpenter.sh/v1, karpenter.sh/v1beta1",
        ),
        (changed(OVERLAY, spec__price="1"), OVERLAY["apiVersion"], "cannot set both 'price' and 'priceAdjustment'"),
    ],
)
def test_single_version_kinds_do_not_convert_and_are_validated(
    document: dict[str, Any], desired: str, words: str
) -> None:
    with pytest.raises(ConversionError) as error:
        convert(document, desired)
    assert words in str(error.value)


def test_the_webhook_answers_for_the_served_kinds() -> None:
    body = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {"uid": "u-1", "desiredAPIVersion": OVERLAY["apiVersion"], "objects": [copy.deepcopy(OVERLAY)]},
    }
    response = answer(parse_review(json.dumps(body)))["response"]
    assert response["result"] == {"status": "Success"} and response["convertedObjects"] == [OVERLAY]
    body["request"]["desiredAPIVersion"] = V1
    failed = answer(parse_review(json.dumps(body)))["response"]
    assert failed["result"]["status"] == "Failure" and "NodeOverlay is served as" in failed["result"]["message"]


def v1_nodepool(**paths: Any) -> dict[str, Any]:
    return changed(to_v1(NODEPOOL_V1BETA1), **paths)


def test_v1beta1_objects_still_convert_to_this_v1() -> None:
    nodepool = to_v1(NODEPOOL_V1BETA1)
    assert "replicas" not in nodepool["spec"] and nodepool["spec"]["disruption"]["consolidationPolicy"] == (
        "WhenEmptyOrUnderutilized"
    )
    nodeclass = to_v1(NODECLASS_V1BETA1)
    assert set(nodeclass["spec"]) >= {"subnetSelectorTerms", "amiSelectorTerms", "metadataOptions"}
    assert not {"capacityReservationSelectorTerms", "networkInterfaces", "cpuOptions"} & set(nodeclass["spec"])


def test_balanced_reads_as_when_underutilized_in_v1beta1() -> None:
    balanced = v1_nodepool(spec__disruption={"consolidationPolicy": "Balanced", "consolidateAfter": "10m"})
    back = to_v1beta1(balanced)
    assert back["spec"]["disruption"]["consolidationPolicy"] == "WhenUnderutilized"


def test_a_static_nodepool_loses_its_replicas_in_v1beta1_only() -> None:
    static = v1_nodepool(spec__replicas=3, spec__limits={"nodes": "4"}, spec__weight=None)
    back = to_v1beta1(static)
    assert "replicas" not in back["spec"]
    assert to_v1(back)["spec"].get("replicas") is None  # v1beta1 cannot carry it: the way back is dynamic


def test_v1_14_class_fields_are_dropped_going_to_v1beta1() -> None:
    nodeclass = changed(
        to_v1(NODECLASS_V1BETA1),
        spec__capacityReservationSelectorTerms=[{"id": "cr-0abc"}],
        spec__placementGroupSelector={"name": "ml"},
        spec__cpuOptions={"nestedVirtualization": "enabled"},
        spec__connectionTracking={"udpTimeout": 30},
        spec__ipPrefixCount=1,
        spec__networkInterfaces=[{"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"}],
    )
    back = to_v1beta1(nodeclass)
    assert back["apiVersion"] == AWS_V1BETA1
    assert set(back["spec"]) == set(to_v1beta1(to_v1(NODECLASS_V1BETA1))["spec"])


def test_an_ssm_parameter_term_cannot_be_represented_in_v1beta1() -> None:
    nodeclass = changed(
        to_v1(NODECLASS_V1BETA1), spec__amiFamily="AL2023", spec__amiSelectorTerms=[{"ssmParameter": "/amis/web"}]
    )
    assert convert(nodeclass, AWS_V1)["spec"]["amiSelectorTerms"] == [{"ssmParameter": "/amis/web"}]
    with pytest.raises(ConversionError, match=r"cannot be represented in karpenter.k8s.aws/v1beta1: .*ssmParameter"):
        to_v1beta1(nodeclass)
