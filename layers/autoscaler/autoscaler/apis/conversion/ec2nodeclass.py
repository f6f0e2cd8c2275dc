"""EC2NodeClass karpenter.k8s.aws/v1beta1 <-> karpenter.k8s.aws/v1.

To v1: a family with AMI discovery (AL2, AL2023, Bottlerocket, Windows) and no amiSelectorTerms becomes
the alias ``<family>@latest`` (or the version a pinned v1 alias left in an annotation) with amiFamily
cleared; with terms, amiFamily and terms are kept. Ubuntu becomes AL2, recorded in an annotation, with
Ubuntu's 20Gi root volume when the class had no block device mappings, and a placeholder AMI term that
keeps the class not ready when it had no terms. Everything else, metadataOptions included, is copied.
Back to v1beta1, the annotation undoes what the Ubuntu conversion added, an alias becomes amiFamily
(its pinned version an annotation), and kubelet settings, which v1beta1 classes lack, are dropped.
"""

from __future__ import annotations

from typing import Any

from autoscaler.apis.conversion.annotations import (
    UBUNTU_AMI_FAMILY,
    UBUNTU_BLOCK_DEVICE_MAPPINGS,
    UBUNTU_INCOMPATIBLE,
    encode_ubuntu_changes,
    ubuntu_changes,
    with_annotations,
)
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.ec2nodeclass import EC2NodeClass
from autoscaler.apis.v1beta1 import ec2nodeclass as v1beta1
from autoscaler.apis.v1beta1.common import AWS_GROUP_VERSION

ALIASED_FAMILIES = ("AL2", "AL2023", "Bottlerocket", "Windows2019", "Windows2022")
LATEST = "latest"
UBUNTU_PLACEHOLDER_AMI = "ami-placeholder"
UBUNTU_ROOT_VOLUME: dict[str, Any] = {
    "deviceName": "/dev/sda1",
    "rootVolume": True,
    "ebs": {"encrypted": True, "volumeSize": "20Gi", "volumeType": "gp3"},
}
# Spec fields both versions have and convert unchanged.
COMMON_FIELDS = (
    "subnetSelectorTerms",
    "securityGroupSelectorTerms",
    "associatePublicIPAddress",
    "userData",
    "role",
    "instanceProfile",
    "tags",
    "blockDeviceMappings",
    "instanceStorePolicy",
    "detailedMonitoring",
    "metadataOptions",
    "context",
)


def to_v1(source: v1beta1.EC2NodeClass) -> dict[str, Any]:
    body = source.to_dict()
    spec_body, family = body["spec"], source.spec.ami_family
    spec: dict[str, Any] = {k: spec_body[k] for k in COMMON_FIELDS if k in spec_body}
    terms = spec_body.get("amiSelectorTerms") or []
    annotations: dict[str, str] = {}
    if family in ALIASED_FAMILIES and not terms:
        version = (source.metadata.annotations or {}).get(wk.ANNOTATION_ALIAS_VERSION_COMPATIBILITY, LATEST)
        spec["amiSelectorTerms"] = [{"alias": f"{family.lower()}@{version}"}]
    elif family == "Ubuntu":
        # AL2's bootstrap script reads the same user data as Ubuntu's did; only discovery is gone.
        changes = {UBUNTU_AMI_FAMILY}
        spec["amiFamily"] = "AL2"
        if source.spec.block_device_mappings is None:
            changes.add(UBUNTU_BLOCK_DEVICE_MAPPINGS)
            spec["blockDeviceMappings"] = [UBUNTU_ROOT_VOLUME]
        spec["amiSelectorTerms"] = terms
        if not terms:
            changes.add(UBUNTU_INCOMPATIBLE)
            spec["amiSelectorTerms"] = [{"id": UBUNTU_PLACEHOLDER_AMI}]
        annotations[wk.ANNOTATION_UBUNTU_COMPATIBILITY] = encode_ubuntu_changes(changes)
    else:
        spec["amiFamily"] = family if family in ALIASED_FAMILIES else "Custom"
        spec["amiSelectorTerms"] = terms
    metadata = with_annotations(body["metadata"], annotations, drop=[wk.ANNOTATION_ALIAS_VERSION_COMPATIBILITY])
    return {
        "apiVersion": wk.AWS_API_VERSION,
        "kind": "EC2NodeClass",
        "metadata": metadata,
        "spec": spec,
        **({"status": body["status"]} if "status" in body else {}),
    }


def to_v1beta1(source: EC2NodeClass) -> dict[str, Any]:
    body = source.to_dict()
    spec_body = body["spec"]
    spec: dict[str, Any] = {k: spec_body[k] for k in COMMON_FIELDS if k in spec_body}
    terms = [term for term in spec_body["amiSelectorTerms"] if "alias" not in term]
    annotations: dict[str, str] = {}
    changes = ubuntu_changes(source.metadata.annotations)
    if changes:
        spec["amiFamily"] = "Ubuntu"
        # Take back only what the conversion added and the user has not replaced since (Karpenter v1.0
        # drops the terms and mappings whatever they have become).
        if UBUNTU_INCOMPATIBLE in changes:
            terms = [term for term in terms if term.get("id") != UBUNTU_PLACEHOLDER_AMI]
        if UBUNTU_BLOCK_DEVICE_MAPPINGS in changes and spec.get("blockDeviceMappings") == [UBUNTU_ROOT_VOLUME]:
            del spec["blockDeviceMappings"]
    else:
        spec["amiFamily"] = source.spec.resolved_ami_family
    alias = source.spec.alias
    if alias is not None and alias.split("@", 1)[1] != LATEST:
        annotations[wk.ANNOTATION_ALIAS_VERSION_COMPATIBILITY] = alias.split("@", 1)[1]
    if terms:
        spec["amiSelectorTerms"] = terms
    metadata = with_annotations(
        body["metadata"],
        annotations,
        drop=[
            wk.ANNOTATION_UBUNTU_COMPATIBILITY,
            wk.ANNOTATION_STORED_VERSION_MIGRATED,
            wk.ANNOTATION_ALIAS_VERSION_COMPATIBILITY,
        ],
    )
    return {
        "apiVersion": AWS_GROUP_VERSION,
        "kind": "EC2NodeClass",
        "metadata": metadata,
        "spec": spec,
        **({"status": body["status"]} if "status" in body else {}),
    }
