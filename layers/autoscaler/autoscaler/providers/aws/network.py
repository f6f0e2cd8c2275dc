"""Subnets and security groups an EC2NodeClass selects. Terms are ORed; within a term, every tag must
match (``*`` matches any value). Results are cached briefly: a class's status is refreshed every few
minutes and every launch reads free IPs."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from autoscaler.apis.v1.ec2nodeclass import (
    SecurityGroupSelectorTerm,
    SecurityGroupStatus,
    SubnetSelectorTerm,
    SubnetStatus,
)
from autoscaler.clock import utc_now
from autoscaler.providers.aws.cache import TTLCache
from autoscaler.providers.aws.clients import transient_errors

if TYPE_CHECKING:
    from autoscaler.providers.aws.clients import AWSClients

RESOLUTION_TTL = timedelta(minutes=1)
FREE_IPS_TTL = timedelta(seconds=30)


def tag_filters(tags: dict[str, str] | None) -> list[dict[str, Any]]:
    """EC2 filters for a term's tags: ``tag:<key>`` for a value, ``tag-key`` for the ``*`` wildcard."""
    return [
        {"Name": "tag-key", "Values": [key]} if value == "*" else {"Name": f"tag:{key}", "Values": [value]}
        for key, value in sorted((tags or {}).items())
    ]


def _key(terms: Sequence[Any]) -> str:
    return json.dumps([t.to_dict() for t in terms], sort_keys=True)


class NetworkResolver:
    def __init__(self, clients: AWSClients, clock: Callable[[], datetime] = utc_now) -> None:
        self._clients = clients
        self._subnets: TTLCache[list[dict[str, Any]]] = TTLCache(RESOLUTION_TTL, clock)
        self._groups: TTLCache[list[SecurityGroupStatus]] = TTLCache(RESOLUTION_TTL, clock)
        self._free_ips: TTLCache[dict[str, int]] = TTLCache(FREE_IPS_TTL, clock)

    def _describe_subnets(self, terms: Sequence[SubnetSelectorTerm]) -> list[dict[str, Any]]:
        found: dict[str, dict[str, Any]] = {}
        with transient_errors("describing subnets"):
            for term in terms:
                filters = [{"Name": "subnet-id", "Values": [term.id]}] if term.id else tag_filters(term.tags)
                for page in self._clients.ec2.get_paginator("describe_subnets").paginate(Filters=filters):  # type: ignore[arg-type]
                    for subnet in page["Subnets"]:
                        if subnet.get("State", "available") == "available":
                            found[subnet["SubnetId"]] = dict(subnet)
        return list(found.values())

    def subnets(self, terms: Sequence[SubnetSelectorTerm]) -> list[SubnetStatus]:
        """Matching subnets, most free IP addresses first (the order launches prefer)."""
        raw = self._subnets.get_or_load(_key(terms), lambda: self._describe_subnets(terms))
        ordered = sorted(raw, key=lambda s: (-s.get("AvailableIpAddressCount", 0), s["SubnetId"]))
        return [
            SubnetStatus(id=s["SubnetId"], zone=s["AvailabilityZone"], zone_id=s.get("AvailabilityZoneId"))
            for s in ordered
        ]

    def free_ips(self, subnet_ids: Sequence[str]) -> dict[str, int]:
        """Free IPv4 addresses per subnet, for choosing one subnet per zone at launch."""
        key = tuple(sorted(subnet_ids))

        def load() -> dict[str, int]:
            with transient_errors("describing subnets"):
                pages = self._clients.ec2.get_paginator("describe_subnets").paginate(
                    Filters=[{"Name": "subnet-id", "Values": list(key)}]
                )
                return {s["SubnetId"]: s.get("AvailableIpAddressCount", 0) for p in pages for s in p["Subnets"]}

        return self._free_ips.get_or_load(key, load)

    def _describe_groups(self, terms: Sequence[SecurityGroupSelectorTerm]) -> list[SecurityGroupStatus]:
        found: dict[str, SecurityGroupStatus] = {}
        with transient_errors("describing security groups"):
            for term in terms:
                if term.id:
                    filters: list[dict[str, Any]] = [{"Name": "group-id", "Values": [term.id]}]
                elif term.name:
                    filters = [{"Name": "group-name", "Values": [term.name]}]
                else:
                    filters = tag_filters(term.tags)
                paginator = self._clients.ec2.get_paginator("describe_security_groups")
                for page in paginator.paginate(Filters=filters):  # type: ignore[arg-type]
                    for group in page["SecurityGroups"]:
                        found[group["GroupId"]] = SecurityGroupStatus(id=group["GroupId"], name=group.get("GroupName"))
        return sorted(found.values(), key=lambda g: g.id)

    def security_groups(self, terms: Sequence[SecurityGroupSelectorTerm]) -> list[SecurityGroupStatus]:
        return self._groups.get_or_load(_key(terms), lambda: self._describe_groups(terms))

    def invalidate(self) -> None:
        self._subnets.invalidate()
        self._groups.invalidate()
        self._free_ips.invalidate()
