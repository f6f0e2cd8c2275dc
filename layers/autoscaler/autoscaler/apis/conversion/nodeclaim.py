"""NodeClaim karpenter.sh/v1beta1 <-> karpenter.sh/v1.

Kubelet settings and the node class reference convert as a NodePool template's do. A v1beta1 NodeClaim
has no ``expireAfter``: Karpenter v1.0 copies its NodePool's, and writes ``Never`` when the NodeClaim has
no NodePool or its NodePool is gone. The conversion webhook holds no credentials to look the NodePool
up, so when it is not at hand the v1 NodeClaim gets ``Never`` and a mark saying its NodePool's value
applies while that NodePool exists (see ``effective_expire_after``): the same outcome, resolved later.
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
NEVER = "Never"


def to_v1(source: v1beta1.NodeClaim, nodepool_expire_after: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``nodepool_expire_after`` maps NodePool names to their (v1) expireAfter, where they are known."""
    body = source.to_dict()
    spec = source.spec
    fields, annotations = spec_to_v1(body["spec"], spec.node_class_ref, spec.kubelet)
    if "resources" in body["spec"]:
        fields["resources"] = body["spec"]["resources"]
    drop = [] if spec.kubelet is not None else [wk.ANNOTATION_KUBELET_COMPATIBILITY]
    nodepool = (source.metadata.labels or {}).get(wk.LABEL_NODEPOOL)
    known = (nodepool_expire_after or {}).get(nodepool) if nodepool is not None else None
    fields["expireAfter"] = known if known is not None else NEVER
    if nodepool is not None and known is None:
        annotations[wk.ANNOTATION_EXPIRE_AFTER_COMPATIBILITY] = "true"
    else:
        drop.append(wk.ANNOTATION_EXPIRE_AFTER_COMPATIBILITY)
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
