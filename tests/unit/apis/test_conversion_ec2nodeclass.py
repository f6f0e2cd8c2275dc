"""EC2NodeClass conversion, case by case as Karpenter v1.0's webhook converts it (its conversion tests' cases
and the upgrade guide's Ubuntu example), plus where we deliberately differ."""

from __future__ import annotations

import pytest

from autoscaler.apis.conversion import ubuntu_incompatible
from autoscaler.apis.v1 import EC2NodeClass
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.validation import parse
from tests.unit.apis.conversion_cases import AWS_V1, NODECLASS_V1BETA1, changed, to_v1, to_v1beta1

UBUNTU_ROOT = {
    "deviceName": "/dev/sda1",
    "rootVolume": True,
    "ebs": {"encrypted": True, "volumeSize": "20Gi", "volumeType": "gp3"},
}
PINNED = [{"id": "ami-0123456789abcdef"}]
CUSTOM_ROOT = [
    {
        "deviceName": "/dev/sdb1",
        "rootVolume": True,
        "ebs": {"encrypted": False, "volumeSize": "40Gi", "volumeType": "gp2"},
    }
]


def test_everything_but_ami_selection_is_copied() -> None:
    v1 = to_v1(NODECLASS_V1BETA1)
    assert v1["apiVersion"] == AWS_V1
    source = NODECLASS_V1BETA1["spec"]
    for field in (
        "role",
        "subnetSelectorTerms",
        "securityGroupSelectorTerms",
        "associatePublicIPAddress",
        "userData",
        "tags",
        "instanceStorePolicy",
        "detailedMonitoring",
        "context",
    ):
        assert v1["spec"][field] == source[field], field
    # metadataOptions as they were: v1beta1's defaults (hop limit 2), not v1's
    assert v1["spec"]["metadataOptions"]["httpPutResponseHopLimit"] == 2
    assert v1["status"] == NODECLASS_V1BETA1["status"]
    bdms = changed(NODECLASS_V1BETA1, spec__blockDeviceMappings=CUSTOM_ROOT)
    assert to_v1(bdms)["spec"]["blockDeviceMappings"] == CUSTOM_ROOT


@pytest.mark.parametrize(
    ("family", "alias"),
    [
        ("AL2", "al2@latest"),
        ("AL2023", "al2023@latest"),
        ("Bottlerocket", "bottlerocket@latest"),
        ("Windows2019", "windows2019@latest"),
        ("Windows2022", "windows2022@latest"),
    ],
)
def test_a_family_without_terms_becomes_its_alias(family: str, alias: str) -> None:
    v1 = to_v1(changed(NODECLASS_V1BETA1, spec__amiFamily=family))
    assert v1["spec"]["amiSelectorTerms"] == [{"alias": alias}]
    assert "amiFamily" not in v1["spec"]
    back = to_v1beta1(v1)
    assert back["spec"]["amiFamily"] == family
    assert "amiSelectorTerms" not in back["spec"]


def test_a_pinned_alias_survives_v1beta1_in_an_annotation() -> None:
    v1 = to_v1(NODECLASS_V1BETA1)
    v1["spec"]["amiSelectorTerms"] = [{"alias": "al2023@v20240807"}]
    back = to_v1beta1(v1)
    assert back["spec"]["amiFamily"] == "AL2023"
    assert back["metadata"]["annotations"] == {wk.ANNOTATION_ALIAS_VERSION_COMPATIBILITY: "v20240807"}
    again = to_v1(back)
    assert again["spec"]["amiSelectorTerms"] == [{"alias": "al2023@v20240807"}]
    assert "annotations" not in again["metadata"]


def test_a_family_with_terms_keeps_both() -> None:
    v1 = to_v1(changed(NODECLASS_V1BETA1, spec__amiSelectorTerms=PINNED))
    assert (v1["spec"]["amiFamily"], v1["spec"]["amiSelectorTerms"]) == ("AL2023", PINNED)
    custom = to_v1(changed(NODECLASS_V1BETA1, spec__amiFamily="Custom", spec__amiSelectorTerms=[{"name": "img-*"}]))
    assert (custom["spec"]["amiFamily"], custom["spec"]["amiSelectorTerms"]) == ("Custom", [{"name": "img-*"}])


def test_ubuntu_with_terms_becomes_al2_with_ubuntus_root_volume() -> None:
    # The upgrade guide's example: amiFamily Ubuntu with an AMI id.
    v1 = to_v1(changed(NODECLASS_V1BETA1, spec__amiFamily="Ubuntu", spec__amiSelectorTerms=PINNED))
    assert v1["metadata"]["annotations"] == {wk.ANNOTATION_UBUNTU_COMPATIBILITY: "amiFamily,blockDeviceMappings"}
    assert (v1["spec"]["amiFamily"], v1["spec"]["amiSelectorTerms"]) == ("AL2", PINNED)
    assert v1["spec"]["blockDeviceMappings"] == [UBUNTU_ROOT]
    nodeclass = parse(v1)
    assert isinstance(nodeclass, EC2NodeClass) and not ubuntu_incompatible(nodeclass)
    back = to_v1beta1(v1)
    assert back["spec"]["amiFamily"] == "Ubuntu"
    assert back["spec"]["amiSelectorTerms"] == PINNED
    assert "blockDeviceMappings" not in back["spec"] and "annotations" not in back["metadata"]


def test_ubuntu_keeps_its_own_block_device_mappings() -> None:
    v1 = to_v1(
        changed(
            NODECLASS_V1BETA1,
            spec__amiFamily="Ubuntu",
            spec__amiSelectorTerms=PINNED,
            spec__blockDeviceMappings=CUSTOM_ROOT,
        )
    )
    assert v1["metadata"]["annotations"] == {wk.ANNOTATION_UBUNTU_COMPATIBILITY: "amiFamily"}
    assert v1["spec"]["blockDeviceMappings"] == CUSTOM_ROOT
    assert to_v1beta1(v1)["spec"]["blockDeviceMappings"] == CUSTOM_ROOT


def test_ubuntu_without_terms_converts_but_is_marked_incompatible() -> None:
    v1 = to_v1(changed(NODECLASS_V1BETA1, spec__amiFamily="Ubuntu"))
    assert v1["metadata"]["annotations"] == {
        wk.ANNOTATION_UBUNTU_COMPATIBILITY: "amiFamily,blockDeviceMappings,incompatible"
    }
    assert v1["spec"]["amiSelectorTerms"] == [{"id": "ami-placeholder"}]
    nodeclass = parse(v1)
    assert isinstance(nodeclass, EC2NodeClass) and ubuntu_incompatible(nodeclass)
    back = to_v1beta1(v1)
    assert "amiSelectorTerms" not in back["spec"] and back["spec"]["amiFamily"] == "Ubuntu"
    # Where we differ: once the user replaces the placeholder, the class is usable and the AMI survives a
    # trip through v1beta1 (Karpenter v1.0 keeps the class unusable and drops the terms).
    v1["spec"]["amiSelectorTerms"] = PINNED
    fixed = parse(v1)
    assert isinstance(fixed, EC2NodeClass) and not ubuntu_incompatible(fixed)
    assert to_v1beta1(v1)["spec"]["amiSelectorTerms"] == PINNED


def test_kubelet_and_v1_only_annotations_are_dropped_for_v1beta1() -> None:
    v1 = to_v1(NODECLASS_V1BETA1)
    v1["spec"]["kubelet"] = {"maxPods": 30}
    v1["metadata"]["annotations"] = {wk.ANNOTATION_STORED_VERSION_MIGRATED: "true", "keep": "me"}
    back = to_v1beta1(v1)
    assert "kubelet" not in back["spec"]
    assert back["metadata"]["annotations"] == {"keep": "me"}
    assert back["spec"]["metadataOptions"] == v1["spec"]["metadataOptions"]
