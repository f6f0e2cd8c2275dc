"""Conversion between Karpenter's v1beta1 and v1 APIs, as Karpenter v1.0's conversion webhooks do it.

- ``convert(document, desired_api_version)`` converts one object either way (``convert.py``);
- ``review.answer_review`` answers an apiextensions.k8s.io ConversionReview (the webhook's core);
- ``effective_kubelet``, ``effective_expire_after`` and ``ubuntu_incompatible`` tell the controllers what a
  converted object's compatibility annotations mean for its nodes (``effective.py``).
"""

from autoscaler.apis.conversion.annotations import CompatibilityAnnotationError
from autoscaler.apis.conversion.convert import SERVED_KINDS, V1BETA1_KINDS, ConversionError, convert
from autoscaler.apis.conversion.effective import (
    UBUNTU_INCOMPATIBLE_MESSAGE,
    UBUNTU_INCOMPATIBLE_REASON,
    effective_expire_after,
    effective_kubelet,
    ubuntu_incompatible,
)

__all__ = [
    "SERVED_KINDS",
    "UBUNTU_INCOMPATIBLE_MESSAGE",
    "UBUNTU_INCOMPATIBLE_REASON",
    "V1BETA1_KINDS",
    "CompatibilityAnnotationError",
    "ConversionError",
    "convert",
    "effective_expire_after",
    "effective_kubelet",
    "ubuntu_incompatible",
]
