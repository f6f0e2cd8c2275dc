"""NodeClaim helpers every controller reads: whether it is initialized, its object reference, and whether
``karpenter.sh/do-not-disrupt`` holds it. Pure."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.conditions import is_true
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.kube.port import ObjectRef

INITIALIZED = "Initialized"  # the condition the lifecycle sets once the Node is ready with its resources


def is_initialized(claim: NodeClaim) -> bool:
    return is_true(claim.status.conditions if claim.status else None, INITIALIZED)


def claim_ref(claim: NodeClaim) -> ObjectRef:
    return ObjectRef("NodeClaim", claim.name, uid=claim.metadata.uid)


def do_not_disrupt(
    *,
    node: Mapping[str, Any] | None = None,
    claim: NodeClaim | None = None,
    pods: Iterable[Mapping[str, Any]] = (),
) -> str | None:
    """Which of the Node, the NodeClaim and the pods carries ``karpenter.sh/do-not-disrupt: "true"`` (the first,
    in that order), as a sentence; None when none does. Voluntary disruption leaves such a node alone."""
    marked: list[tuple[str, Mapping[str, Any]]] = []
    if node is not None:
        marked.append(("the node", (node.get("metadata") or {}).get("annotations") or {}))
    if claim is not None:
        marked.append(("the nodeclaim", claim.metadata.annotations or {}))
    for pod in pods:
        metadata = pod.get("metadata") or {}
        marked.append((f"pod {metadata.get('namespace')}/{metadata.get('name')}", metadata.get("annotations") or {}))
    for owner, marks in marked:
        if marks.get(wk.ANNOTATION_DO_NOT_DISRUPT) == "true":
            return f"{owner} has {wk.ANNOTATION_DO_NOT_DISRUPT}"
    return None
