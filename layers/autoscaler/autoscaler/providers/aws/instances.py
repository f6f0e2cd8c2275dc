"""EC2 instances: describe, list, terminate and tag in batches, and CreateFleet."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from autoscaler.apis.v1 import labels as wk
from autoscaler.providers.aws.clients import transient_errors

if TYPE_CHECKING:
    from autoscaler.providers.aws.clients import AWSClients

LIVE_STATES = ["pending", "running", "stopping", "stopped", "shutting-down"]
BATCH = 500  # instance ids per Describe/Terminate call, well under EC2's limits
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

    @property
    def provider_id(self) -> str:
        return f"aws:///{self.zone}/{self.id}"

    @classmethod
    def from_ec2(cls, raw: dict[str, Any]) -> Instance:
        return cls(
            id=raw["InstanceId"],
            instance_type=raw.get("InstanceType", ""),
            zone=raw.get("Placement", {}).get("AvailabilityZone", ""),
            image_id=raw.get("ImageId", ""),
            subnet_id=raw.get("SubnetId", ""),
            security_group_ids=tuple(sorted(g["GroupId"] for g in raw.get("SecurityGroups", []))),
            capacity_type=wk.CAPACITY_TYPE_SPOT
            if raw.get("InstanceLifecycle") == "spot"
            else wk.CAPACITY_TYPE_ON_DEMAND,
            state=raw.get("State", {}).get("Name", ""),
            launch_time=raw.get("LaunchTime"),
            tags={t["Key"]: t["Value"] for t in raw.get("Tags", [])},
        )


def _chunks(items: Sequence[str], size: int = BATCH) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


class Instances:
    def __init__(self, clients: AWSClients) -> None:
        self._clients = clients

    def _describe(self, filters: list[dict[str, Any]]) -> list[Instance]:
        found: list[Instance] = []
        with transient_errors("describing instances"):
            for page in self._clients.ec2.get_paginator("describe_instances").paginate(Filters=filters):  # type: ignore[arg-type]
                for reservation in page["Reservations"]:
                    found.extend(Instance.from_ec2(dict(i)) for i in reservation["Instances"])
        return found

    def describe(self, ids: Sequence[str]) -> dict[str, Instance]:
        """The live instances among ``ids`` (filters, not InstanceIds, so one unknown id fails nothing)."""
        found: dict[str, Instance] = {}
        for chunk in _chunks(sorted(set(ids))):
            filters = [
                {"Name": "instance-id", "Values": chunk},
                {"Name": "instance-state-name", "Values": LIVE_STATES},
            ]
            found.update({i.id: i for i in self._describe(filters)})
        return found

    def owned(self, cluster_name: str, extra: Sequence[dict[str, Any]] = ()) -> list[Instance]:
        """Live instances carrying this cluster's launch tags (and ``extra`` filters)."""
        filters = [
            {"Name": "tag-key", "Values": [wk.TAG_NODEPOOL]},
            {"Name": "tag-key", "Values": [wk.TAG_NODECLASS]},
            {"Name": "tag-key", "Values": [f"{wk.TAG_CLUSTER_PREFIX}{cluster_name}"]},
            {"Name": "instance-state-name", "Values": LIVE_STATES},
            *extra,
        ]
        return self._describe(filters)

    def terminate(self, ids: Sequence[str]) -> set[str]:
        """Terminate the live instances among ``ids``; return those that were live (others are gone)."""
        live = self.describe(ids)
        with transient_errors("terminating instances"):
            for chunk in _chunks(sorted(live)):
                self._clients.ec2.terminate_instances(InstanceIds=chunk)
        return set(live)

    def tag(self, ids: Sequence[str], tags: dict[str, str]) -> None:
        with transient_errors("tagging instances"):
            self._clients.ec2.create_tags(
                Resources=list(ids), Tags=[{"Key": k, "Value": v} for k, v in sorted(tags.items())]
            )

    def create_fleet(self, request: dict[str, Any]) -> dict[str, Any]:
        with transient_errors("creating a fleet"):
            return dict(self._clients.ec2.create_fleet(**request))
