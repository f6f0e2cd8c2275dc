"""The Kubernetes autoscaling SIG's ``autoscaling.x-k8s.io/v1beta1`` API, as Karpenter serves it: CapacityBuffer."""

from autoscaler.apis.autoscaling.capacitybuffer import CapacityBuffer, CapacityBufferSpec

__all__ = ["CapacityBuffer", "CapacityBufferSpec"]
