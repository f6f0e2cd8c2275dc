"""What a NodePool's template and a NodeClaim convert alike: requirements and taints unchanged, the node
class reference (``apiVersion`` <-> ``group``), and kubelet settings moved to and from an annotation."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from autoscaler.apis.conversion.annotations import (
    decode_kubelet,
    decode_reference,
    encode_kubelet,
    encode_reference,
)
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.common import NodeClassReference
from autoscaler.apis.v1.kubelet import KubeletConfiguration
from autoscaler.apis.v1beta1 import common as v1beta1

DEFAULT_NODECLASS_KIND = "EC2NodeClass"
DEFAULT_NODECLASS_GROUP = wk.AWS_GROUP
SHARED_FIELDS = ("taints", "startupTaints", "requirements")

# Annotations only a v1 object carries; reading it as v1beta1 drops them.
V1_ONLY_ANNOTATIONS = (
    wk.ANNOTATION_KUBELET_COMPATIBILITY,
    wk.ANNOTATION_NODECLASS_REFERENCE,
    wk.ANNOTATION_STORED_VERSION_MIGRATED,
    wk.ANNOTATION_EXPIRE_AFTER_COMPATIBILITY,
)


def reference_to_v1(reference: v1beta1.NodeClassReference) -> dict[str, str]:
    """v1 requires group and kind: v1beta1's optional ones default to EC2NodeClass in karpenter.k8s.aws."""
    group = reference.api_version.split("/", 1)[0] if reference.api_version else DEFAULT_NODECLASS_GROUP
    return {"group": group, "kind": reference.kind or DEFAULT_NODECLASS_KIND, "name": reference.name}


def reference_to_v1beta1(reference: NodeClassReference, recorded: str | None) -> dict[str, str]:
    """The v1beta1 reference recorded at conversion when it still names the same class, else kind and name.

    Karpenter v1.0 restores the recorded reference even after the v1 reference was edited; we restore it
    only while it agrees, so a v1beta1 reader never sees a class the object no longer points at."""
    if recorded is not None:
        original = decode_reference(recorded)
        if reference_to_v1(original) == {"group": reference.group, "kind": reference.kind, "name": reference.name}:
            return original.to_dict()
    return {"kind": reference.kind, "name": reference.name}


def spec_to_v1(
    body: Mapping[str, Any], reference: v1beta1.NodeClassReference, kubelet: KubeletConfiguration | None
) -> tuple[dict[str, Any], dict[str, str]]:
    """The v1 fields of a v1beta1 template or NodeClaim spec, and the compatibility annotations to set."""
    fields = {k: body[k] for k in SHARED_FIELDS if k in body}
    fields["nodeClassRef"] = reference_to_v1(reference)
    annotations = {wk.ANNOTATION_NODECLASS_REFERENCE: encode_reference(reference)}
    if kubelet is not None:
        annotations[wk.ANNOTATION_KUBELET_COMPATIBILITY] = encode_kubelet(kubelet)
    return fields, annotations


def spec_to_v1beta1(
    body: Mapping[str, Any], reference: NodeClassReference, annotations: Mapping[str, str] | None
) -> dict[str, Any]:
    """The v1beta1 fields of a v1 template or NodeClaim spec, kubelet restored from its annotation."""
    recorded = annotations or {}
    fields = {k: body[k] for k in SHARED_FIELDS if k in body}
    fields["nodeClassRef"] = reference_to_v1beta1(reference, recorded.get(wk.ANNOTATION_NODECLASS_REFERENCE))
    kubelet = recorded.get(wk.ANNOTATION_KUBELET_COMPATIBILITY)
    if kubelet is not None:
        fields["kubelet"] = decode_kubelet(kubelet).to_dict()
    return fields
