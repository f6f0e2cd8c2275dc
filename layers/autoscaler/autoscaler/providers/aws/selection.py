"""Which instance types, capacity type, AMI and subnets a launch offers EC2 Fleet. Pure.

The order of preference is Karpenter's: instance types that fit the NodeClaim and have an available
offering that meets its requirements; reserved, then spot, when the requirements allow it and such an
offering exists, else on-demand (a reserved launch is narrowed to one reservation); ordinary types
before metal and accelerated ones; in a launch that could be spot or on-demand, no spot type dearer
than the cheapest on-demand one; cheapest first, at most 60.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from autoscaler.apis.resources import Resources, fits
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.common import NodeSelectorRequirementWithMinValues
from autoscaler.apis.v1.ec2nodeclass import AMIStatus
from autoscaler.cloudprovider.requirements import allowed_values, compatible
from autoscaler.cloudprovider.types import InstanceType, Offering, Reservation
from autoscaler.providers.aws.reserved import reservation_labels

MAX_INSTANCE_TYPES = 60
OFFERING_KEYS = frozenset(
    {
        wk.LABEL_ZONE,
        wk.LABEL_CAPACITY_TYPE,
        wk.LABEL_ZONE_ID,
        wk.LABEL_CAPACITY_RESERVATION_ID,
        wk.LABEL_CAPACITY_RESERVATION_TYPE,
        wk.LABEL_CAPACITY_RESERVATION_INTERRUPTIBLE,
    }
)
# Requirements on these keys are answered by the instance type's labels; others by the node's own labels.
INSTANCE_TYPE_KEYS = wk.WELL_KNOWN_LABELS - OFFERING_KEYS - {wk.LABEL_NODEPOOL}
_ACCELERATORS = (wk.RESOURCE_NVIDIA_GPU, wk.RESOURCE_AMD_GPU, wk.RESOURCE_AWS_NEURON, wk.RESOURCE_HABANA_GAUDI)

Requirements = Sequence[NodeSelectorRequirementWithMinValues]


def offering_labels(offering: Offering) -> dict[str, str]:
    labels = {wk.LABEL_ZONE: offering.zone, wk.LABEL_CAPACITY_TYPE: offering.capacity_type}
    if offering.zone_id:
        labels[wk.LABEL_ZONE_ID] = offering.zone_id
    if offering.reservation is not None:
        labels.update(reservation_labels(offering.reservation))
    return labels


def compatible_offerings(
    instance_type: InstanceType, requirements: Requirements, capacity_type: str | None = None
) -> list[Offering]:
    return [
        o
        for o in instance_type.offerings
        if o.available
        and (capacity_type is None or o.capacity_type == capacity_type)
        and compatible(offering_labels(o), requirements, OFFERING_KEYS)
    ]


def launchable(
    instance_types: Iterable[InstanceType], requirements: Requirements, requests: Resources
) -> list[InstanceType]:
    """Types whose labels meet the requirements, whose allocatable fits the requests, and that have an
    available offering meeting the zone and capacity-type requirements."""
    return [
        it
        for it in instance_types
        if compatible(it.labels, requirements, INSTANCE_TYPE_KEYS)
        and fits(requests, it.allocatable)
        and compatible_offerings(it, requirements)
    ]


def capacity_type(instance_types: Sequence[InstanceType], requirements: Requirements) -> str:
    """The first of reserved, spot that the requirements admit and some type has an offering of that meets them
    (Karpenter's order); on-demand otherwise."""
    for preferred_type in (wk.CAPACITY_TYPE_RESERVED, wk.CAPACITY_TYPE_SPOT):
        if allowed_values(requirements, wk.LABEL_CAPACITY_TYPE, [preferred_type]) and any(
            compatible_offerings(it, requirements, preferred_type) for it in instance_types
        ):
            return preferred_type
    return wk.CAPACITY_TYPE_ON_DEMAND


def narrowed_to_reservation(
    instance_types: Sequence[InstanceType], requirements: Requirements
) -> tuple[Reservation, list[NodeSelectorRequirementWithMinValues]]:
    """The reservation a reserved launch targets, the cheapest available one the requirements allow (ties: by id),
    and the requirements pinned to it. ``instance_types`` must have one (``capacity_type`` chose reserved)."""
    offered = [
        (o.price, o.reservation.id, o.reservation)
        for it in instance_types
        for o in compatible_offerings(it, requirements, wk.CAPACITY_TYPE_RESERVED)
        if o.reservation is not None
    ]
    reservation = min(offered)[2]
    pinned = NodeSelectorRequirementWithMinValues.model_construct(
        key=wk.LABEL_CAPACITY_RESERVATION_ID, operator="In", values=[reservation.id], min_values=None
    )
    return reservation, [*requirements, pinned]


def _cheapest(instance_type: InstanceType, requirements: Requirements, capacity: str | None = None) -> float:
    return min((o.price for o in compatible_offerings(instance_type, requirements, capacity)), default=float("inf"))


def _is_exotic(instance_type: InstanceType) -> bool:
    return "metal" in instance_type.labels.get(wk.LABEL_INSTANCE_SIZE, "") or any(
        instance_type.capacity.get(r, 0) for r in _ACCELERATORS
    )


def preferred(instance_types: Sequence[InstanceType], requirements: Requirements) -> list[InstanceType]:
    """The types to offer, cheapest first (for the capacity type chosen), at most MAX_INSTANCE_TYPES."""
    candidates = list(instance_types)
    if not any(r.min_values for r in requirements):  # minValues needs the full spread of types
        candidates = [it for it in candidates if not _is_exotic(it)] or candidates
        both = allowed_values(requirements, wk.LABEL_CAPACITY_TYPE, [wk.CAPACITY_TYPE_SPOT, wk.CAPACITY_TYPE_ON_DEMAND])
        cheapest_on_demand = min(
            (_cheapest(it, requirements, wk.CAPACITY_TYPE_ON_DEMAND) for it in candidates), default=float("inf")
        )
        if len(both) == 2 and cheapest_on_demand < float("inf"):
            candidates = [it for it in candidates if _cheapest(it, requirements) <= cheapest_on_demand]
    chosen = capacity_type(candidates, requirements)
    candidates = [it for it in candidates if compatible_offerings(it, requirements, chosen)]
    candidates.sort(key=lambda it: (_cheapest(it, requirements, chosen), it.name))
    return candidates[:MAX_INSTANCE_TYPES]


def image_for(instance_type: InstanceType, amis: Sequence[AMIStatus]) -> str | None:
    """The first of the class's AMIs (newest first) whose requirements the instance type meets."""
    return next((ami.id for ami in amis if compatible(instance_type.labels, ami.requirements)), None)


@dataclass(frozen=True)
class Override:
    """One (instance type, subnet) choice of a fleet, with the AMI it boots."""

    instance_type: str
    subnet_id: str
    zone: str
    image_id: str
    priority: float | None = None  # the offering's (overlaid) price, for EC2 Fleet's prioritized strategies

    def to_request(self) -> dict[str, str | float]:
        request: dict[str, str | float] = {
            "InstanceType": self.instance_type,
            "SubnetId": self.subnet_id,
            "ImageId": self.image_id,
            "AvailabilityZone": self.zone,  # redundant for EC2, but capacity errors then name the zone
        }
        if self.priority is not None:
            request["Priority"] = self.priority
        return request


def overrides(
    instance_types: Sequence[InstanceType],
    requirements: Requirements,
    chosen_capacity_type: str,
    subnet_by_zone: Mapping[str, str],
    image_id: str,
    *,
    prioritized: bool = False,
) -> list[Override]:
    """Each type x each zone it may launch in with the chosen capacity type, in the zone's subnet; ``prioritized``:
    with the offering's price as its priority (Karpenter's, so that a fleet follows a NodeOverlay's prices)."""
    result: list[Override] = []
    for it in instance_types:
        prices: dict[str, float] = {}
        for o in compatible_offerings(it, requirements, chosen_capacity_type):
            prices[o.zone] = min(o.price, prices.get(o.zone, o.price))
        result.extend(
            Override(it.name, subnet_by_zone[z], z, image_id, prices[z] if prioritized else None)
            for z in sorted(prices)
            if z in subnet_by_zone
        )
    return result
