"""NodeClaim karpenter.sh/v1beta1 <-> karpenter.sh/v1.

Kubelet settings and the node class reference convert as a NodePool template's do. A v1beta1 NodeClaim
has no ``expireAfter``: Karpenter v1.0 looks up its NodePool's. The conversion webhook holds no
credentials, so when the NodePool is not at hand the v1 NodeClaim is marked to take its NodePool's
``expireAfter`` (see ``effective_expire_after``) instead of silently getting the 720h default.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from autoscaler.apis.conversion.annotations import with_annotations
from autoscaler.apis.conversion.claims import V1_ONLY_ANNOTATIONS, spec_to_v1, spec_to_v1beta1
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.apis.v1beta1 import nodeclaim as v1beta1
from autoscaler.apis.v1beta1.common import GROUP_VERSION

# Status fields v1 added.
V1_ONLY_STATUS = ("lastPodEventTime",)


def to_v1(source: v1beta1.NodeClaim, nodepool_expire_after: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``nodepool_expire_after`` maps NodePool names to their (v1) expireAfter, where they are known."""
    body = source.to_dict()
    spec = source.spec
    fields, annotations = spec_to_v1(body["spec"], spec.node_class_ref, spec.kubelet)
    if "resources" in body["spec"]:
        fields["resources"] = body["spec"]["resources"]
    drop = [] if spec.kubelet is not None else [wk.ANNOTATION_KUBELET_COMPATIBILITY]
    nodepool = (source.metadata.labels or {}).get(wk.LABEL_NODEPOOL)
    if nodepool is not None:
        known = (nodepool_expire_after or {}).get(nodepool)
        if known is not None:
            fields["expireAfter"] = known
            drop.append(wk.ANNOTATION_EXPIRE_AFTER_COMPATIBILITY)
        else:
            annotations[wk.ANNOTATION_EXPIRE_AFTER_COMPATIBILITY] = "true"
    return {
        "apiVersion": wk.API_VERSION,
        "kind": "NodeClaim",
        "metadata": with_annotations(body["metadata"], annotations, drop),
        "spec": fields,
        **({"status": body["status"]} if "status" in body else {}),
    }


def to_v1beta1(source: NodeClaim) -> dict[str, Any]:
    """``expireAfter`` and ``terminationGracePeriod`` have no v1beta1 field and are dropped."""
    body = source.to_dict()
    fields = spec_to_v1beta1(body["spec"], source.spec.node_class_ref, source.metadata.annotations)
    if "resources" in body["spec"]:
        fields["resources"] = body["spec"]["resources"]
    result = {
        "apiVersion": GROUP_VERSION,
        "kind": "NodeClaim",
        "metadata": with_annotations(body["metadata"], drop=V1_ONLY_ANNOTATIONS),
        "spec": fields,
    }
    if "status" in body:
        result["status"] = {k: v for k, v in body["status"].items() if k not in V1_ONLY_STATUS}
    return result
