"""What a v1 object converted from v1beta1 means for the controllers: the settings that apply to its nodes.

The provisioner, drift detection and the nodeclass controller call these instead of reading the fields
directly, so that objects converted from v1beta1 behave as they did under Karpenter v1beta1 (and as under
Karpenter v1.0) until the user moves the settings into their v1 places.
"""

from __future__ import annotations

from autoscaler.apis.conversion.annotations import UBUNTU_INCOMPATIBLE, decode_kubelet, ubuntu_changes
from autoscaler.apis.conversion.ec2nodeclass import UBUNTU_PLACEHOLDER_AMI
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.ec2nodeclass import EC2NodeClass
from autoscaler.apis.v1.kubelet import KubeletConfiguration
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.apis.v1.nodepool import NodePool

# The EC2NodeClass status condition a class converted from v1beta1 Ubuntu without AMI terms reports.
# Karpenter v1.0's reason (what alerts on AMINotFound already watch); the message is what tells it apart.
UBUNTU_INCOMPATIBLE_REASON = "AMINotFound"
UBUNTU_INCOMPATIBLE_MESSAGE = (
    "converted from v1beta1 amiFamily: Ubuntu, whose AMI discovery v1 no longer supports: replace the "
    "placeholder term {id: ami-placeholder} in amiSelectorTerms with your Ubuntu EKS AMI (by id, or by name "
    "and owner) and keep amiFamily: AL2; see docs/migration.md"
)


def effective_kubelet(owner: NodePool | NodeClaim | None, nodeclass: EC2NodeClass) -> KubeletConfiguration | None:
    """The kubelet settings for nodes of ``owner`` (a NodePool, or one NodeClaim) launched with ``nodeclass``.

    A NodePool or NodeClaim converted from v1beta1 carries its v1beta1 kubelet settings in the
    ``compatibility.karpenter.sh/v1beta1-kubelet-conversion`` annotation. When present, those settings
    apply *instead of* ``nodeclass.spec.kubelet`` (whole, not merged field by field), as in Karpenter
    v1.0: NodePools that shared a class with different kubelet settings keep their own. Otherwise the
    class's settings apply; None means kubelet defaults. Use the NodePool when launching and when
    computing drift, the NodeClaim when rendering its user data (it keeps what it was launched with).

    Raises ``CompatibilityAnnotationError`` (a ValueError naming the annotation) when the annotation is
    not valid kubelet settings as JSON: the caller should report the owner as misconfigured, not guess.
    """
    annotation = (owner.metadata.annotations or {}).get(wk.ANNOTATION_KUBELET_COMPATIBILITY) if owner else None
    if annotation is not None:
        return decode_kubelet(annotation)
    return nodeclass.spec.kubelet


def effective_expire_after(nodeclaim: NodeClaim, nodepool: NodePool | None) -> str:
    """How long ``nodeclaim``'s node may live ("720h", "Never", ...): its ``spec.expireAfter``, except for a
    NodeClaim converted from v1beta1 by the webhook, which could not look up its NodePool: then the
    NodePool's ``template.spec.expireAfter``, as Karpenter v1.0's conversion would have copied it, or the
    NodeClaim's own ``Never`` when that NodePool no longer exists (Karpenter's fallback). Pass the NodePool
    named by the NodeClaim's ``karpenter.sh/nodepool`` label, or None when there is none.
    """
    marked = wk.ANNOTATION_EXPIRE_AFTER_COMPATIBILITY in (nodeclaim.metadata.annotations or {})
    if marked and nodepool is not None:
        return nodepool.spec.template.spec.expire_after
    return nodeclaim.spec.expire_after


def ubuntu_incompatible(nodeclass: EC2NodeClass) -> bool:
    """True for a class converted from a v1beta1 Ubuntu class without AMI terms, while its placeholder AMI
    term is still there: it must report ``AMIsReady=False`` (reason ``UBUNTU_INCOMPATIBLE_REASON``, message
    ``UBUNTU_INCOMPATIBLE_MESSAGE``) and launch nothing. Replacing the placeholder with real terms is
    enough to make it usable (Karpenter v1.0 also wants the annotation removed)."""
    placeholder = any(term.id == UBUNTU_PLACEHOLDER_AMI for term in nodeclass.spec.ami_selector_terms)
    return placeholder and UBUNTU_INCOMPATIBLE in ubuntu_changes(nodeclass.metadata.annotations)
