"""What the lifecycle asks of the cloud: the CloudProvider port's batch forms and the registration tag.

``providers.aws.AWSCloudProvider`` implements it; tests use fakes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.cloudprovider.errors import CloudProviderError
from autoscaler.cloudprovider.overlays import Overlays


class LifecycleCloud(Protocol):
    def create_many(
        self, claims: Sequence[NodeClaim], overlays: Overlays | None = None
    ) -> list[NodeClaim | CloudProviderError]:
        """Launch each NodeClaim (identical launches may share one call) on its NodePool's instance types with
        ``overlays`` applied; answer i is NodeClaim i as launched or the error that stopped it. Idempotent per
        NodeClaim: a NodeClaim that already has an instance gets that instance back."""
        ...

    def settle_launches(self) -> None:
        """Wait for what ``create_many`` left running beside its answers (the AWS provider's NodeClaim tags on the
        instances): called once a pass's launches are done, so that nothing outlives the invocation. Never raises
        a CloudProviderError (failures are logged); a dying invocation's error propagates."""
        ...

    def get_many(self, provider_ids: Sequence[str]) -> dict[str, NodeClaim | CloudProviderError]:
        """Provider ID -> the live instance as a NodeClaim (labels, capacity), or NodeClaimNotFoundError."""
        ...

    def tag_registered(self, nodeclaim: NodeClaim, node_name: str) -> None:
        """Tag the instance with ``Name`` and ``karpenter.sh/nodeclaim``. Raises NodeClaimNotFoundError,
        TransientCloudError or CloudProviderError."""
        ...
