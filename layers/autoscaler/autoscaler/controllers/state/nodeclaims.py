"""NodeClaim helpers every controller reads: whether it is initialized, and its object reference. Pure."""

from __future__ import annotations

from autoscaler.apis.v1.conditions import is_true
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.kube.port import ObjectRef

INITIALIZED = "Initialized"  # the condition the lifecycle sets once the Node is ready with its resources


def is_initialized(claim: NodeClaim) -> bool:
    return is_true(claim.status.conditions if claim.status else None, INITIALIZED)


def claim_ref(claim: NodeClaim) -> ObjectRef:
    return ObjectRef("NodeClaim", claim.name, uid=claim.metadata.uid)
