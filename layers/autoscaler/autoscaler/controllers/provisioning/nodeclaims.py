"""A scheduling decision as the NodeClaim to create, exactly as Karpenter v1 creates it. Pure.

Generated name ``<nodepool>-<suffix>``; the template's labels and the label ``karpenter.sh/nodepool``;
the template's annotations, the NodePool hash and hash version, the EC2NodeClass hash and version (as the
launch would stamp them) and the v1beta1 kubelet compatibility annotation when the NodePool carries one;
``karpenter.sh/price-overlay-applied`` / ``capacity-overlay-applied`` when a NodeOverlay changed one of its
instance type options; ours, the UIDs of the pods it is for (``inflight.NOMINATED_PODS``); the finalizer
``karpenter.sh/termination`` (so that no instance outlives a NodeClaim deleted before its first lifecycle step); an
owner reference to the NodePool; and the spec: requirements including the chosen instance type options, resource
requests, nodeClassRef, taints, startup taints, expireAfter and terminationGracePeriod.
"""

from __future__ import annotations

from typing import Any

from autoscaler.apis.conversion.effective import effective_expire_after
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.ec2nodeclass import EC2NodeClass
from autoscaler.apis.v1.hashing import NODEPOOL_HASH_VERSION, nodepool_hash
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.apis.v1.nodepool import NodePool
from autoscaler.controllers.state.inflight import NOMINATED_PODS, nomination
from autoscaler.scheduling import NewNodeClaim

_NODECLASS_ANNOTATIONS = (wk.ANNOTATION_NODECLASS_HASH, wk.ANNOTATION_NODECLASS_HASH_VERSION)


def owner_reference(nodepool: NodePool) -> dict[str, object]:
    return {
        "apiVersion": wk.API_VERSION,
        "kind": "NodePool",
        "name": nodepool.name,
        "uid": nodepool.metadata.uid or "",
        "blockOwnerDeletion": True,
    }


def overlay_annotations(new: NewNodeClaim) -> dict[str, str]:
    """Karpenter's marks of a NodeClaim whose instance type options a NodeOverlay priced or gave capacity."""
    marks = {}
    if any(option.instance_type.price_overlaid for option in new.instance_types):
        marks[wk.ANNOTATION_PRICE_OVERLAY_APPLIED] = "true"
    if any(option.instance_type.capacity_overlaid for option in new.instance_types):
        marks[wk.ANNOTATION_CAPACITY_OVERLAY_APPLIED] = "true"
    return marks


def to_nodeclaim(new: NewNodeClaim, nodepool: NodePool, nodeclass: EC2NodeClass | None) -> NodeClaim:
    template = nodepool.spec.template
    template_meta = template.metadata
    annotations = dict(template_meta.annotations or {}) if template_meta else {}
    annotations[wk.ANNOTATION_NODEPOOL_HASH] = nodepool_hash(nodepool)
    annotations[wk.ANNOTATION_NODEPOOL_HASH_VERSION] = NODEPOOL_HASH_VERSION
    pool_annotations = nodepool.metadata.annotations or {}
    if wk.ANNOTATION_KUBELET_COMPATIBILITY in pool_annotations:
        annotations[wk.ANNOTATION_KUBELET_COMPATIBILITY] = pool_annotations[wk.ANNOTATION_KUBELET_COMPATIBILITY]
    class_annotations = (nodeclass.metadata.annotations or {}) if nodeclass else {}
    annotations.update({k: class_annotations[k] for k in _NODECLASS_ANNOTATIONS if k in class_annotations})
    annotations[NOMINATED_PODS] = nomination(pod.uid for pod in new.pods)
    annotations.update(overlay_annotations(new))
    spec = template.spec
    claim_spec: dict[str, Any] = {
        "taints": [t.to_dict() for t in spec.taints or []] or None,
        "startupTaints": [t.to_dict() for t in spec.startup_taints or []] or None,
        "requirements": new.node_selector_requirements(),
        "resources": {"requests": new.resource_requests()},
        "nodeClassRef": spec.node_class_ref.to_dict(),
        "expireAfter": spec.expire_after,
        "terminationGracePeriod": spec.termination_grace_period,
    }
    body = {
        "apiVersion": wk.API_VERSION,
        "kind": "NodeClaim",
        "metadata": {
            "generateName": f"{nodepool.name}-",
            "labels": {**new.labels, wk.LABEL_NODEPOOL: nodepool.name},
            "annotations": annotations,
            "finalizers": [wk.FINALIZER_TERMINATION],
            "ownerReferences": [owner_reference(nodepool)],
        },
        "spec": {k: v for k, v in claim_spec.items() if v is not None},
    }
    claim = NodeClaim.model_validate(body)
    expire_after = effective_expire_after(claim, nodepool)
    if expire_after != claim.spec.expire_after:
        claim = claim.model_copy(update={"spec": claim.spec.model_copy(update={"expire_after": expire_after})})
    return claim
