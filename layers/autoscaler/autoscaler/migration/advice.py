"""What a person must decide about one converted object: the warnings ``autoscaler convert`` prints.

Each function takes an object of the input and returns plain sentences; none of them changes anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from autoscaler.apis.conversion.annotations import (
    UBUNTU_BLOCK_DEVICE_MAPPINGS,
    UBUNTU_INCOMPATIBLE,
    ubuntu_changes,
)
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.ec2nodeclass import ALIAS_FAMILIES, EC2NodeClass
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.apis.v1.nodepool import NodePool
from autoscaler.migration.inventory import KarpenterObject

DEPRECATED_ANNOTATIONS = (wk.ANNOTATION_DO_NOT_EVICT_V1BETA1, wk.ANNOTATION_DO_NOT_CONSOLIDATE_V1BETA1)
# Where each workload kind keeps the metadata of its pods.
POD_METADATA_PATHS: dict[str, tuple[str, ...]] = {
    "Pod": ("metadata",),
    "Node": ("metadata",),
    **dict.fromkeys(
        ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "ReplicationController", "Job"),
        ("spec", "template", "metadata"),
    ),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "metadata"),
    "PodTemplate": ("template", "metadata"),
}


def latest_alias(nodeclass: EC2NodeClass) -> str | None:
    """The ``family@latest`` alias the class follows, if it follows one."""
    alias = nodeclass.spec.alias
    return alias if alias is not None and alias.endswith("@latest") else None


def pin_advice(alias: str) -> str:
    """How to stop following ``family@latest``: pin a release, or (Windows, which only follows latest)
    select AMIs by id or name."""
    family = alias.split("@", 1)[0]
    if family.startswith("windows"):
        return (
            "Windows aliases can only follow latest: to choose when nodes change, select the AMIs by id or by "
            f"name in amiSelectorTerms with amiFamily {ALIAS_FAMILIES.get(family, family)}"
        )
    release = "v1.20.4" if family == "bottlerocket" else "v20240807"
    return f"pin a release for production (for example {family}@{release}) and move the pin on purpose"


def alias_warning(nodeclass: EC2NodeClass) -> str | None:
    alias = latest_alias(nodeclass)
    if alias is None:
        return None
    return (
        f"AMIs now follow the alias {alias}: each new EKS-optimized AMI release drifts and replaces these nodes; "
        + pin_advice(alias)
        + "."
    )


def ubuntu_warning(nodeclass: EC2NodeClass) -> str | None:
    """What the conversion of an Ubuntu class did and what is left to do; None for other classes."""
    changes = ubuntu_changes(nodeclass.metadata.annotations)
    if not changes:
        return None
    done = ["amiFamily Ubuntu became AL2 (its bootstrap script reads the same user data)"]
    if UBUNTU_BLOCK_DEVICE_MAPPINGS in changes:
        done.append("Ubuntu's root volume (/dev/sda1, 20Gi gp3, encrypted) was added")
    todo = "Keep amiFamily: AL2 with your pinned Ubuntu AMI terms; compatibility with AL2's bootstrap is not promised."
    if UBUNTU_INCOMPATIBLE in changes:
        done.append("a placeholder AMI term (ami-placeholder) was added: Ubuntu AMIs are no longer discovered")
        todo = (
            "The class launches nothing (AMIsReady=False) until you replace `id: ami-placeholder` with your "
            "Ubuntu EKS AMI (by id, or by name and owner)."
        )
    return "Ubuntu: " + "; ".join(done) + ". " + todo


def hop_limit_warning(nodeclass: EC2NodeClass) -> str | None:
    hop_limit = nodeclass.spec.metadata_options.http_put_response_hop_limit
    if hop_limit <= 1:
        return None
    return (
        f"metadataOptions.httpPutResponseHopLimit {hop_limit} is kept from v1beta1, so pods off the host network "
        "still reach IMDS. New v1 classes default to 1, which cuts them off: keep it only if such pods need "
        "IMDS (node-role credentials, instance metadata)."
    )


def nodeclass_warnings(obj: KarpenterObject) -> list[str]:
    nodeclass = obj.v1
    if not isinstance(nodeclass, EC2NodeClass):
        return []
    found = [ubuntu_warning(nodeclass)]
    if obj.converted:  # a class already written as v1 made these choices itself
        found = [alias_warning(nodeclass), *found, hop_limit_warning(nodeclass)]
    return [w for w in found if w is not None]


def kubelet_warnings(obj: KarpenterObject) -> list[str]:
    owner = obj.v1
    if not isinstance(owner, (NodePool, NodeClaim)):
        return []
    if wk.ANNOTATION_KUBELET_COMPATIBILITY not in (owner.metadata.annotations or {}):
        return []
    reference = owner.spec.template.spec.node_class_ref if isinstance(owner, NodePool) else owner.spec.node_class_ref
    return [
        f"kubelet settings moved to the annotation {wk.ANNOTATION_KUBELET_COMPATIBILITY}, which takes precedence "
        f"over EC2NodeClass/{reference.name}.spec.kubelet. Move them to that class (a class per distinct set of "
        "settings) and remove the annotation."
    ]


def expire_after_warnings(obj: KarpenterObject) -> list[str]:
    owner = obj.v1
    if not isinstance(owner, NodeClaim) or wk.ANNOTATION_EXPIRE_AFTER_COMPATIBILITY not in (
        owner.metadata.annotations or {}
    ):
        return []
    nodepool = (owner.metadata.labels or {}).get(wk.LABEL_NODEPOOL, "")
    return [
        f"NodePool/{nodepool} is not in the input, so this NodeClaim's expireAfter is taken from that NodePool at "
        f"runtime, Never if it is gone (annotation {wk.ANNOTATION_EXPIRE_AFTER_COMPATIBILITY})."
    ]


def _metadata_at(body: Mapping[str, Any], path: tuple[str, ...]) -> Mapping[str, Any]:
    node: Any = body
    for key in path:
        node = node.get(key) if isinstance(node, Mapping) else None
    return node if isinstance(node, Mapping) else {}


def deprecated_annotations(body: Mapping[str, Any]) -> list[str]:
    """The v1beta1 annotations (do-not-evict, do-not-consolidate) on a pod, node or workload's pods."""
    path = POD_METADATA_PATHS.get(str(body.get("kind")))
    if path is None:
        return []
    annotations = _metadata_at(body, path).get("annotations")
    return [a for a in DEPRECATED_ANNOTATIONS if isinstance(annotations, Mapping) and a in annotations]


def workload_warnings(body: Mapping[str, Any]) -> list[str]:
    found = deprecated_annotations(body)
    if not found:
        return []
    return [
        f"{', '.join(found)} no longer protect{'s' if len(found) == 1 else ''} anything in v1: annotate with "
        f'{wk.ANNOTATION_DO_NOT_DISRUPT}: "true" instead.'
    ]


def object_warnings(obj: KarpenterObject) -> list[str]:
    return [*nodeclass_warnings(obj), *kubelet_warnings(obj), *expire_after_warnings(obj)]
