"""The CloudProvider port: what controllers may ask of a cloud, and the types it answers with. Pure."""

from autoscaler.cloudprovider.errors import (
    CloudProviderError,
    CreateError,
    ForeignInstanceError,
    InsufficientCapacityError,
    NodeClaimNotFoundError,
    NodeClassNotReadyError,
    OfferingKey,
    TransientCloudError,
)
from autoscaler.cloudprovider.port import UNAVAILABLE_OFFERING_TTL, CloudProvider, UnavailableOfferings
from autoscaler.cloudprovider.types import Drift, DriftReason, InstanceType, InstanceTypeOverhead, Offering

__all__ = [
    "UNAVAILABLE_OFFERING_TTL",
    "CloudProvider",
    "CloudProviderError",
    "CreateError",
    "Drift",
    "DriftReason",
    "ForeignInstanceError",
    "InstanceType",
    "InstanceTypeOverhead",
    "InsufficientCapacityError",
    "NodeClaimNotFoundError",
    "NodeClassNotReadyError",
    "Offering",
    "OfferingKey",
    "TransientCloudError",
    "UnavailableOfferings",
]
