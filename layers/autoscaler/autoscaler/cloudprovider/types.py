"""What a cloud offers: instance types, their capacity and overhead, and priced offerings per zone.

Pure data: the AWS provider builds these from EC2, the scheduler consumes them. An instance type's
intrinsic properties are single-valued ``labels`` (Karpenter's well-known labels: instance type,
arch, os, ``karpenter.k8s.aws/instance-*``); where it can run, and at what price, is its
``offerings`` (zone x capacity type).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from autoscaler.apis.resources import Resources, add, subtract

DriftReason = str  # e.g. "AMIDrift", "SubnetDrift", "SecurityGroupDrift", "NodeClassDrift"


@dataclass(frozen=True)
class Drift:
    """Why a NodeClaim no longer matches what it would be launched as now: Karpenter's reason (the ``Drifted``
    condition's) and a message naming what changed."""

    reason: DriftReason
    message: str


@dataclass(frozen=True, slots=True)
class Reservation:
    """The capacity reservation a reserved offering launches into (Karpenter's reservation requirements)."""

    id: str
    type: str  # "default" or "capacity-block"
    interruptible: bool = False
    capacity: int = 0  # its free instances as last known (Karpenter's Offering.ReservationCapacity)


@dataclass(frozen=True, slots=True)
class Offering:
    """One way to buy an instance type: in a zone, as spot, on-demand or reserved, at a price per hour (USD)."""

    zone: str
    capacity_type: str  # "spot", "on-demand" or "reserved" (labels.CAPACITY_TYPE_*)
    price: float
    available: bool = True
    zone_id: str | None = None
    price_overlaid: bool = False  # a NodeOverlay set the price (Karpenter's Offering.IsPriceOverlaid)
    reservation: Reservation | None = None  # set exactly on reserved offerings


@dataclass(frozen=True, slots=True)
class InstanceTypeOverhead:
    """What the node keeps for itself: kube-reserved, system-reserved and the hard eviction threshold."""

    kube_reserved: Resources = field(default_factory=dict)
    system_reserved: Resources = field(default_factory=dict)
    eviction_threshold: Resources = field(default_factory=dict)

    def total(self) -> Resources:
        return add(self.kube_reserved, self.system_reserved, self.eviction_threshold)


@dataclass(frozen=True, slots=True)
class InstanceType:
    """An instance type as a NodePool may launch it (capacity already reflects the node class's
    kubelet settings, e.g. maxPods, and the VM memory overhead)."""

    name: str
    labels: Mapping[str, str]
    offerings: tuple[Offering, ...]
    capacity: Resources
    overhead: InstanceTypeOverhead = field(default_factory=InstanceTypeOverhead)
    capacity_overlaid: bool = False  # a NodeOverlay added capacity (Karpenter's IsCapacityOverlayApplied)

    @property
    def allocatable(self) -> Resources:
        """Capacity less overhead: what pods may request on a node of this type."""
        return {name: max(value, 0) for name, value in subtract(self.capacity, self.overhead.total()).items()}

    @property
    def price_overlaid(self) -> bool:
        return any(o.price_overlaid for o in self.offerings)

    def available_offerings(self) -> tuple[Offering, ...]:
        return tuple(o for o in self.offerings if o.available)

    def cheapest_price(
        self, capacity_types: frozenset[str] | None = None, zones: frozenset[str] | None = None
    ) -> float:
        """The lowest price among available offerings in the given capacity types and zones (inf if none)."""
        prices = [
            o.price
            for o in self.offerings
            if o.available
            and (capacity_types is None or o.capacity_type in capacity_types)
            and (zones is None or o.zone in zones)
        ]
        return min(prices, default=float("inf"))
