"""CreateFleet requests and what their answers mean. Pure.

The ClientToken is derived from the NodeClaim UIDs the request serves, so a retried launch (same
NodeClaims, same request) is answered by EC2 with the instances of the first call, never new ones.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from autoscaler.apis.v1 import labels as wk
from autoscaler.cloudprovider.errors import OfferingKey
from autoscaler.providers.aws.launchconfig import tag_list
from autoscaler.providers.aws.selection import Override

# Errors that mean "no capacity for this offering now": mark it unavailable and try others.
CAPACITY_ERROR_CODES = frozenset(
    {
        "InsufficientInstanceCapacity",
        "MaxSpotInstanceCountExceeded",
        "VcpuLimitExceeded",
        "UnfulfillableCapacity",
        "Unsupported",
        "InsufficientFreeAddressesInSubnet",
        "ReservationCapacityExceeded",
        "InsufficientCapacity",
        "SpotMaxPriceTooLow",
    }
)
# What EC2 says when a rack-level spread placement group already holds seven running instances in a zone.
SPREAD_LIMIT_MESSAGE = "limit of instances in this spread placement group"
TOKEN_PREFIX = "sk-"


def client_token(nodeclaim_uids: Sequence[str], request: Mapping[str, Any] | None = None) -> str:
    """At most 64 characters, as EC2 requires: the UID itself for one NodeClaim, a digest for several; with
    ``request``, a digest of the UIDs and the request (but its token), for a retry that asks for something else."""
    if request is None and len(nodeclaim_uids) == 1 and len(nodeclaim_uids[0]) <= 64 - len(TOKEN_PREFIX):
        return TOKEN_PREFIX + nodeclaim_uids[0]
    text = "\n".join(sorted(nodeclaim_uids))
    if request is not None:
        text += "\n" + json.dumps({k: v for k, v in request.items() if k != "ClientToken"}, sort_keys=True)
    return TOKEN_PREFIX + hashlib.sha256(text.encode()).hexdigest()[:48]


def fleet_request(
    launch_templates: Sequence[tuple[str, Sequence[Override]]],
    *,
    capacity_type: str,
    count: int,
    tags: Mapping[str, str],
    token: str,
    context: str | None = None,
    prioritized: bool = False,
) -> dict[str, Any]:
    """An instant fleet of ``count`` instances; spot with price-capacity-optimized, on-demand lowest-price; when
    ``prioritized`` (a NodeOverlay priced the types; the overrides carry priorities), Karpenter's
    capacity-optimized-prioritized and prioritized, so that EC2 follows the overlaid prices."""
    tagged = tag_list(tags)
    request: dict[str, Any] = {
        "Type": "instant",
        "ClientToken": token,
        "LaunchTemplateConfigs": [
            {
                "LaunchTemplateSpecification": {"LaunchTemplateName": name, "Version": "$Latest"},
                "Overrides": [o.to_request() for o in overrides],
            }
            for name, overrides in launch_templates
            if overrides
        ],
        # A reserved launch is an on-demand one whose template targets the reservation (EC2 knows no "reserved").
        "TargetCapacitySpecification": {
            "DefaultTargetCapacityType": wk.CAPACITY_TYPE_ON_DEMAND
            if capacity_type == wk.CAPACITY_TYPE_RESERVED
            else capacity_type,
            "TotalTargetCapacity": count,
        },
        "TagSpecifications": [
            {"ResourceType": resource, "Tags": tagged} for resource in ("instance", "volume", "fleet")
        ],
    }
    if capacity_type == wk.CAPACITY_TYPE_SPOT:
        spot = "capacity-optimized-prioritized" if prioritized else "price-capacity-optimized"
        request["SpotOptions"] = {"AllocationStrategy": spot}
    else:
        request["OnDemandOptions"] = {"AllocationStrategy": "prioritized" if prioritized else "lowest-price"}
    if context:
        request["Context"] = context
    return request


def is_spread_limit(error: Mapping[str, Any]) -> bool:
    """A CreateFleet error that is a spread placement group's per-zone limit rather than a shortage of the type."""
    return SPREAD_LIMIT_MESSAGE in str(error.get("ErrorMessage") or "")


def capacity_failures(
    errors: Sequence[Mapping[str, Any]],
    capacity_type: str,
    zone_of_subnet: Mapping[str, str],
    placement_group: str = "",
    instance_types: Sequence[str] = (),
) -> list[OfferingKey]:
    """The offerings that failed for lack of capacity, from CreateFleet's ``Errors``. Launches into a placement
    group mark offerings of that group only; a spread group's per-zone limit marks every one of
    ``instance_types`` in the zone (the limit is the group's, whatever the type)."""
    failed: list[OfferingKey] = []
    for error in errors:
        if error.get("ErrorCode") not in CAPACITY_ERROR_CODES:
            continue
        override = error.get("LaunchTemplateAndOverrides", {}).get("Overrides", {})
        zone = override.get("AvailabilityZone") or zone_of_subnet.get(override.get("SubnetId", ""), "")
        if not zone:
            continue
        if placement_group and is_spread_limit(error):
            failed.extend(OfferingKey(t, zone, capacity_type, placement_group) for t in instance_types)
        elif override.get("InstanceType"):
            failed.append(OfferingKey(override["InstanceType"], zone, capacity_type, placement_group))
    return sorted(set(failed), key=lambda k: (k.instance_type, k.zone))


def launched_ids(response: Mapping[str, Any]) -> list[str]:
    return [i for group in response.get("Instances", []) for i in group.get("InstanceIds", [])]


def error_summary(errors: Sequence[Mapping[str, Any]]) -> str:
    codes = sorted({f"{e.get('ErrorCode')}: {e.get('ErrorMessage', '')}".strip() for e in errors})
    return "; ".join(codes) or "CreateFleet launched nothing and reported no error"
