"""The smallest valid EC2NodeClass and NodePool, as tests build their clusters from them (the world's discovery
tags and node role by default)."""

from __future__ import annotations

from typing import Any


def nodeclass(name: str = "default", discovery: str = "world", role: str = "") -> dict[str, Any]:
    selector = [{"tags": {"karpenter.sh/discovery": discovery}}]
    return {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": name},
        "spec": {
            "role": role or f"KarpenterNodeRole-{discovery}",
            "amiSelectorTerms": [{"alias": "al2023@latest"}],
            "subnetSelectorTerms": selector,
            "securityGroupSelectorTerms": selector,
        },
    }


def nodepool(
    name: str = "default",
    requirements: list[dict[str, Any]] | None = None,
    nodeclass_name: str = "default",
    **spec: Any,
) -> dict[str, Any]:
    """``spec`` adds to the NodePool's spec (``disruption=...``, ``limits=...``)."""
    wanted = requirements or [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]
    template = {
        "spec": {
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": nodeclass_name},
            "requirements": wanted,
        }
    }
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {"template": template, **spec},
    }
