"""An EC2 instance as the provider reads it, and provider IDs (``aws:///<zone>/<instance-id>``). Pure."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from autoscaler.apis.v1 import labels as wk

LIVE_STATES = ["pending", "running", "stopping", "stopped", "shutting-down"]
_PROVIDER_ID = re.compile(r"^aws:///(?P<zone>[^/]+)/(?P<id>i-[0-9a-z]+)$")


class ProviderIDError(ValueError):
    """Not an ``aws:///<zone>/<instance-id>`` provider ID."""


def instance_id(provider_id: str | None) -> str:
    match = _PROVIDER_ID.match(provider_id or "")
    if not match:
        raise ProviderIDError(f"expected a provider ID like aws:///us-west-2a/i-0123456789abcdef0, got {provider_id!r}")
    return match.group("id")


@dataclass(frozen=True)
class Instance:
    id: str
    instance_type: str
    zone: str
    image_id: str
    subnet_id: str
    security_group_ids: tuple[str, ...]
    capacity_type: str
    state: str
    launch_time: datetime | None = None
    tags: dict[str, str] = field(default_factory=dict)
    placement_group_id: str = ""
    partition: int | None = None  # in a partition placement group, the partition EC2 chose
    capacity_reservation_id: str = ""  # a reserved instance: the reservation it was launched into

    @property
    def provider_id(self) -> str:
        return f"aws:///{self.zone}/{self.id}"

    def owned_by(self, cluster_name: str) -> bool:
        """Whether ``cluster_name``'s NodePools own it: the tags the roles' ABAC conditions require to terminate
        or tag an instance (``ClusterScope.owned_resource_tags`` in infra/constructs/permissions.py)."""
        return self.tags.get(f"{wk.TAG_CLUSTER_PREFIX}{cluster_name}") == "owned" and wk.TAG_NODEPOOL in self.tags

    @classmethod
    def from_ec2(cls, raw: dict[str, Any]) -> Instance:
        return cls(
            id=raw["InstanceId"],
            instance_type=raw.get("InstanceType", ""),
            zone=raw.get("Placement", {}).get("AvailabilityZone", ""),
            image_id=raw.get("ImageId", ""),
            subnet_id=raw.get("SubnetId", ""),
            security_group_ids=tuple(sorted(g["GroupId"] for g in raw.get("SecurityGroups", []))),
            capacity_type=_capacity_type(raw),
            state=raw.get("State", {}).get("Name", ""),
            launch_time=raw.get("LaunchTime"),
            tags={t["Key"]: t["Value"] for t in raw.get("Tags", [])},
            placement_group_id=raw.get("Placement", {}).get("GroupId", ""),
            partition=raw.get("Placement", {}).get("PartitionNumber") or None,
            capacity_reservation_id=raw.get("CapacityReservationId", "") if _targeted(raw) else "",
        )


def _targeted(raw: dict[str, Any]) -> bool:
    """Launched into a reservation it targeted (Karpenter's test): an instance that merely landed in an open
    reservation is on-demand."""
    preference = raw.get("CapacityReservationSpecification", {}).get("CapacityReservationPreference")
    return bool(raw.get("CapacityReservationId")) and preference == "capacity-reservations-only"


def _capacity_type(raw: dict[str, Any]) -> str:
    if raw.get("InstanceLifecycle") == "spot":
        return wk.CAPACITY_TYPE_SPOT
    return wk.CAPACITY_TYPE_RESERVED if _targeted(raw) else wk.CAPACITY_TYPE_ON_DEMAND
