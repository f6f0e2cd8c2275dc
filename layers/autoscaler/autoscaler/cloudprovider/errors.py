"""Typed errors of the CloudProvider port. Controllers decide by type, never by message text."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


class CloudProviderError(Exception):
    """Base of every error the cloud provider raises on purpose."""


@dataclass(frozen=True)
class OfferingKey:
    """An offering that failed: the cache of unavailable offerings is keyed by these. ``placement_group`` scopes
    the mark to launches into that group (its id), so a group's shortage leaves launches outside it alone."""

    instance_type: str
    zone: str
    capacity_type: str
    placement_group: str = ""


class InsufficientCapacityError(CloudProviderError):
    """No requested offering had capacity. The offerings that failed are already marked unavailable;
    the caller should delete the NodeClaim so that the next pass chooses among the remaining ones."""

    def __init__(self, message: str, offerings: Sequence[OfferingKey] = ()) -> None:
        super().__init__(message)
        self.offerings = tuple(offerings)


class NodeClaimNotFoundError(CloudProviderError):
    """The instance behind a NodeClaim does not exist (never launched, or already terminated)."""


class ForeignInstanceError(NodeClaimNotFoundError):
    """The NodeClaim names a live instance this cluster does not own (another cluster's, or untagged): it is left
    alone, and for this cluster the NodeClaim has no instance. (A NodeClaim's status is writable by whoever may
    write ``nodeclaims/status``; the roles' ABAC conditions would refuse the call anyway.)"""


class NodeClassNotReadyError(CloudProviderError):
    """The NodeClaim's EC2NodeClass is missing or not Ready (no subnets, AMIs, ... resolved yet)."""


class CreateError(CloudProviderError):
    """A launch failed for a reason other than capacity (invalid launch template, permissions, ...).
    ``reason`` is a short CamelCase word for the NodeClaim's Launched condition."""

    def __init__(self, message: str, reason: str = "LaunchFailed") -> None:
        super().__init__(message)
        self.reason = reason


class TransientCloudError(CloudProviderError):
    """Throttling or a server-side error that persisted through the client's retries: try again later."""
