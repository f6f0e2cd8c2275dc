"""Karpenter's ``karpenter.sh/v1alpha1`` API: NodeOverlay."""

from autoscaler.apis.v1alpha1.nodeoverlay import NodeOverlay, NodeOverlaySpec

__all__ = ["NodeOverlay", "NodeOverlaySpec"]
