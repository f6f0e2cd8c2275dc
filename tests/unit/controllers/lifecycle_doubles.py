"""Doubles for lifecycle and provisioning tests: a cloud that launches by UID, and object builders."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.cloudprovider.errors import CloudProviderError, NodeClaimNotFoundError
from autoscaler.cloudprovider.zonalshift import ShiftedZones

NOW = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)
CAPACITY = {"cpu": "2", "memory": "8Gi", "pods": "29", "ephemeral-storage": "20Gi"}
ALLOCATABLE = {"cpu": "1930m", "memory": "7Gi", "pods": "29", "ephemeral-storage": "17Gi"}


@dataclass
class FakeCloud:
    """Launches one instance per NodeClaim UID (a repeated launch gets the same instance back), unless
    ``answers`` scripts an error for the NodeClaim's name."""

    answers: dict[str, CloudProviderError] = field(default_factory=dict)
    launched: dict[str, NodeClaim] = field(default_factory=dict)  # uid -> as launched
    calls: list[list[str]] = field(default_factory=list)
    tags: list[tuple[str, str]] = field(default_factory=list)
    tag_error: CloudProviderError | None = None
    overlays: list[Any] = field(default_factory=list)  # the evaluated overlays each create_many call was given

    def settle_launches(self) -> None:  # nothing runs beside its launches
        return None

    def create_many(self, claims: Sequence[NodeClaim], overlays: Any = None) -> list[NodeClaim | CloudProviderError]:
        self.calls.append([c.name for c in claims])
        self.overlays.append(overlays)
        out: list[NodeClaim | CloudProviderError] = []
        for claim in claims:
            if claim.name in self.answers:
                out.append(self.answers[claim.name])
                continue
            uid = claim.metadata.uid or claim.name
            if uid not in self.launched:
                self.launched[uid] = self._launch(claim, len(self.launched) + 1)
            out.append(self.launched[uid])
        return out

    @staticmethod
    def _launch(claim: NodeClaim, number: int) -> NodeClaim:
        labels = {
            **(claim.metadata.labels or {}),
            wk.LABEL_INSTANCE_TYPE: "m5.large",
            wk.LABEL_ZONE: "us-west-2a",
            wk.LABEL_CAPACITY_TYPE: "on-demand",
            wk.LABEL_ARCH: "amd64",
        }
        status = {
            "providerID": f"aws:///us-west-2a/i-{number:017x}",
            "imageID": "ami-0123",
            "capacity": CAPACITY,
            "allocatable": ALLOCATABLE,
        }
        return NodeClaim.model_validate(
            {**claim.to_dict(), "metadata": {**claim.metadata.to_dict(), "labels": labels}, "status": status}
        )

    def get_many(self, provider_ids: Sequence[str]) -> dict[str, NodeClaim | CloudProviderError]:
        by_id = {c.status.provider_id: c for c in self.launched.values() if c.status}
        return {p: by_id.get(p) or NodeClaimNotFoundError(p) for p in provider_ids}

    def tag_registered(self, nodeclaim: NodeClaim, node_name: str) -> None:
        if self.tag_error is not None:
            raise self.tag_error
        self.tags.append((nodeclaim.name, node_name))

    def shifted_zones(self) -> ShiftedZones:
        return ShiftedZones()  # no zonal shift in these tests


def nodeclaim(name: str, *, finalizer: bool = True, **spec: Any) -> NodeClaim:
    return NodeClaim.model_validate(
        {
            "metadata": {
                "name": name,
                "uid": f"uid-{name}",
                "labels": {wk.LABEL_NODEPOOL: "default"},
                "annotations": {wk.ANNOTATION_NODEPOOL_HASH: "123"},
                **({"finalizers": [wk.FINALIZER_TERMINATION]} if finalizer else {}),
                "creationTimestamp": "2026-11-30T11:59:00Z",
            },
            "spec": {
                "requirements": [{"key": wk.LABEL_ARCH, "operator": "In", "values": ["amd64"]}],
                "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
                "nodeClassRef": {"group": wk.AWS_GROUP, "kind": "EC2NodeClass", "name": "default"},
                **spec,
            },
        }
    )


def node(
    name: str,
    provider_id: str,
    *,
    ready: bool = True,
    taints: list[dict[str, Any]] | None = None,
    labels: dict[str, str] | None = None,
    allocatable: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A Node as the kubelet registers it from a Karpenter user data (unregistered taint included)."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {wk.LABEL_HOSTNAME: name, **(labels or {})}},
        "spec": {
            "providerID": provider_id,
            "taints": [{"key": wk.TAINT_UNREGISTERED, "effect": "NoExecute"}] if taints is None else taints,
        },
        "status": {
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            "capacity": CAPACITY,
            "allocatable": allocatable or ALLOCATABLE,
        },
    }
