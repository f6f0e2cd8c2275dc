"""Whether ``karpenter.sh/do-not-disrupt`` holds a NodeClaim, its Node or their pods. Pure."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.kube.objects import Body, Pod


def do_not_disrupt(
    *,
    node: Mapping[str, Any] | Body | None = None,
    claim: NodeClaim | None = None,
    pods: Iterable[Mapping[str, Any] | Body] = (),
) -> str | None:
    """Which of the Node, the NodeClaim and the pods carries ``karpenter.sh/do-not-disrupt: "true"`` (the first,
    in that order), as a sentence; None when none does. Voluntary disruption leaves such a node alone."""
    if node is not None and Body.of(node).annotations.get(wk.ANNOTATION_DO_NOT_DISRUPT) == "true":
        return f"the node has {wk.ANNOTATION_DO_NOT_DISRUPT}"
    if claim is not None and (claim.metadata.annotations or {}).get(wk.ANNOTATION_DO_NOT_DISRUPT) == "true":
        return f"the nodeclaim has {wk.ANNOTATION_DO_NOT_DISRUPT}"
    for raw in pods:
        pod = Pod.of(raw)
        if pod.annotations.get(wk.ANNOTATION_DO_NOT_DISRUPT) == "true":
            return f"pod {pod.namespace}/{pod.name} has {wk.ANNOTATION_DO_NOT_DISRUPT}"
    return None
