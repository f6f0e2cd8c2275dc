"""The CloudProvider port (after Karpenter's ``cloudprovider.CloudProvider``) and the shared cache of
unavailable offerings. Controllers depend on these protocols; ``providers.aws`` implements them."""

from __future__ import annotations

import builtins
from datetime import timedelta
from typing import Protocol

from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.apis.v1.nodepool import NodePool
from autoscaler.cloudprovider.errors import OfferingKey
from autoscaler.cloudprovider.types import DriftReason, InstanceType

UNAVAILABLE_OFFERING_TTL = timedelta(minutes=3)


class CloudProvider(Protocol):
    def create(self, nodeclaim: NodeClaim) -> NodeClaim:
        """Launch one instance for ``nodeclaim`` and return the NodeClaim as launched: ``status.providerID``,
        ``imageID``, ``capacity`` and ``allocatable`` set, and ``metadata.labels`` holding the instance's
        well-known labels (instance type, zone, capacity type, arch, ...).

        Idempotent per NodeClaim UID: a retry (same or another process) returns the instance already
        launched for it instead of launching a second one.
        Raises InsufficientCapacityError (offerings marked unavailable), NodeClassNotReadyError, CreateError,
        TransientCloudError."""
        ...

    def delete(self, nodeclaim: NodeClaim) -> None:
        """Start terminating the NodeClaim's instance. Raises NodeClaimNotFoundError when it is already
        gone (terminated or never launched), so callers can finish at once."""
        ...

    def get(self, provider_id: str) -> NodeClaim:
        """The NodeClaim view of a live instance (status and labels from EC2). Raises NodeClaimNotFoundError
        when the instance does not exist or is terminated. An instance that is shutting down comes back with
        ``metadata.deletionTimestamp`` set (as Karpenter's AWS provider reports it): termination stops waiting
        for it then."""
        ...

    def list(self) -> builtins.list[NodeClaim]:
        """Every live instance this cluster owns (by its ownership tags), as NodeClaims; for garbage collection."""
        ...

    def instance_types(self, nodepool: NodePool) -> builtins.list[InstanceType]:
        """Instance types the NodePool's EC2NodeClass can launch, with capacity, overhead and offerings
        (unavailable offerings flagged ``available=False``). Raises NodeClassNotReadyError."""
        ...

    def is_drifted(self, nodeclaim: NodeClaim) -> DriftReason | None:
        """Why the NodeClaim's instance no longer matches its EC2NodeClass (AMIDrift, SubnetDrift,
        SecurityGroupDrift, NodeClassDrifted), or None."""
        ...


class UnavailableOfferings(Protocol):
    """Offerings that recently failed to launch (or were interrupted), shared by every function.

    The in-memory implementation serves tests and a single process; a DynamoDB-backed one serves Lambda."""

    def mark_unavailable(self, offering: OfferingKey, reason: str, ttl: timedelta = UNAVAILABLE_OFFERING_TTL) -> None:
        """Record that ``offering`` should not be tried until ``ttl`` has passed."""
        ...

    def unavailable(self) -> frozenset[OfferingKey]:
        """Every offering currently marked unavailable (one read per scheduling pass)."""
        ...
