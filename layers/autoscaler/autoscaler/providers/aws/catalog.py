"""The instance type catalogue: DescribeInstanceTypes and DescribeInstanceTypeOfferings, priced, turned
into InstanceTypes for an EC2NodeClass. The raw EC2 answers are cached per process (they change rarely
and DescribeInstanceTypes is slow); prices and unavailable offerings are applied on every call."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.ec2nodeclass import EC2NodeClass, SubnetStatus
from autoscaler.apis.v1.ec2nodeclass_status import CapacityReservationStatus
from autoscaler.apis.v1.kubelet import KubeletConfiguration
from autoscaler.clock import utc_now
from autoscaler.cloudprovider.errors import OfferingKey
from autoscaler.cloudprovider.types import InstanceType, Offering
from autoscaler.providers.aws import instancetype
from autoscaler.providers.aws.cache import TTLCache
from autoscaler.providers.aws.clients import transient_errors
from autoscaler.providers.aws.placementgroups import PlacementGroup
from autoscaler.providers.aws.pricing import Pricing
from autoscaler.providers.aws.reserved import reserved_offerings

if TYPE_CHECKING:
    from autoscaler.providers.aws.clients import AWSClients

log = logging.getLogger(__name__)
CATALOG_TTL = timedelta(minutes=5)
USAGE_CLASSES = {"on-demand": wk.CAPACITY_TYPE_ON_DEMAND, "spot": wk.CAPACITY_TYPE_SPOT}


class ReservedCapacity:
    """What reserved offerings are built from: the class's resolved reservations and their free instances."""

    def __init__(self, reservations: Sequence[CapacityReservationStatus], available: Callable[[str], int]) -> None:
        self.reservations, self.available = tuple(reservations), available


class InstanceTypeCatalog:
    """``instance_type_names`` narrows DescribeInstanceTypes (EC2 wildcards such as ``m5.*``); tests and
    constrained accounts use it, production leaves it empty."""

    def __init__(
        self,
        clients: AWSClients,
        pricing: Pricing,
        region: str,
        *,
        vm_memory_overhead_percent: float = 0.075,
        reserved_enis: int = 0,
        instance_type_names: Sequence[str] = (),
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self._clients, self._pricing, self._region = clients, pricing, region
        self._overhead, self._reserved_enis = vm_memory_overhead_percent, reserved_enis
        self._names = tuple(instance_type_names)
        self._infos: TTLCache[dict[str, dict[str, Any]]] = TTLCache(CATALOG_TTL, clock)
        self._zones: TTLCache[dict[str, set[str]]] = TTLCache(CATALOG_TTL, clock)

    def infos(self) -> dict[str, dict[str, Any]]:
        """DescribeInstanceTypes, by name (HVM, x86_64 and arm64 only)."""

        def load() -> dict[str, dict[str, Any]]:
            filters: list[dict[str, Any]] = [
                {"Name": "supported-virtualization-type", "Values": ["hvm"]},
                {"Name": "processor-info.supported-architecture", "Values": ["x86_64", "arm64"]},
            ]
            if self._names:
                filters.append({"Name": "instance-type", "Values": list(self._names)})
            with transient_errors("describing instance types"):
                pages = self._clients.ec2.get_paginator("describe_instance_types").paginate(Filters=filters)  # type: ignore[arg-type]
                return {i["InstanceType"]: dict(i) for page in pages for i in page["InstanceTypes"]}

        return self._infos.get_or_load("infos", load)

    def zones(self) -> dict[str, set[str]]:
        """Instance type -> the availability zones that offer it."""

        def load() -> dict[str, set[str]]:
            offered: dict[str, set[str]] = {}
            with transient_errors("describing instance type offerings"):
                narrowed = [{"Name": "instance-type", "Values": list(self._names)}] if self._names else []
                pages = self._clients.ec2.get_paginator("describe_instance_type_offerings").paginate(
                    LocationType="availability-zone",
                    Filters=narrowed,  # type: ignore[arg-type]
                )
                for page in pages:
                    for offering in page["InstanceTypeOfferings"]:
                        offered.setdefault(offering["InstanceType"], set()).add(offering["Location"])
            return offered

        return self._zones.get_or_load("zones", load)

    def offerings(
        self,
        info: dict[str, Any],
        subnets: Sequence[SubnetStatus],
        unavailable: frozenset[OfferingKey],
        placement_group: str = "",
        shifted: frozenset[str] = frozenset(),
        *,
        reserved: ReservedCapacity | None = None,
    ) -> list[Offering]:
        """Zone x capacity type offerings in the class's zones; an offering without a price is left out. One
        marked unavailable, or marked so for the class's placement group, or in a zone ARC shifts the cluster away
        from (``shifted``: zone IDs), is not available. With ``reserved`` (the ReservedCapacity gate on), also one
        reserved offering per reservation of the type."""
        name, offered_zones = info["InstanceType"], self.zones().get(info["InstanceType"], set())
        zone_ids = {s.zone: s.zone_id for s in subnets}
        result = []
        for zone in sorted(offered_zones & zone_ids.keys()):
            for usage in info.get("SupportedUsageClasses", []):
                capacity_type = USAGE_CLASSES.get(usage)
                if capacity_type is None:
                    continue
                with transient_errors("reading prices"):
                    price = (
                        self._pricing.spot(name, zone)
                        if capacity_type == wk.CAPACITY_TYPE_SPOT
                        else self._pricing.on_demand(name)
                    )
                if price is None:
                    continue
                key = OfferingKey(name, zone, capacity_type)
                available = (
                    key not in unavailable
                    and zone_ids[zone] not in shifted
                    and (
                        not placement_group
                        or OfferingKey(name, zone, capacity_type, placement_group) not in unavailable
                    )
                )
                result.append(Offering(zone, capacity_type, price, available, zone_ids[zone]))
        if reserved is not None and reserved.reservations:
            with transient_errors("reading prices"):
                on_demand = self._pricing.on_demand(name)
            zones = {z: zone_ids[z] for z in offered_zones & zone_ids.keys()}
            result += reserved_offerings(
                name, reserved.reservations, on_demand, zones, reserved.available, shifted=shifted
            )
        return result

    def instance_types(
        self,
        nodeclass: EC2NodeClass,
        kubelet: KubeletConfiguration | None,
        unavailable: frozenset[OfferingKey],
        placement: PlacementGroup | None = None,
        shifted: frozenset[str] = frozenset(),
        *,
        reserved: ReservedCapacity | None = None,
    ) -> list[InstanceType]:
        """Every type the class can launch, with at least one priced offering in its subnets' zones; with the
        class's ``placement`` group, only the types that group's strategy takes, labelled with the group's id
        (so that pods and NodePools may select it); offerings in the ``shifted`` zones (IDs) unavailable."""
        status = nodeclass.status
        subnets = status.subnets if status and status.subnets else []
        cpu = nodeclass.spec.cpu_options
        settings = instancetype.NodeSettings(
            family=nodeclass.spec.resolved_ami_family,
            region=self._region,
            kubelet=kubelet,
            block_device_mappings=tuple(nodeclass.spec.block_device_mappings or ()),
            instance_store_policy=nodeclass.spec.instance_store_policy,
            vm_memory_overhead_percent=self._overhead,
            reserved_enis=self._reserved_enis,
            network_interfaces=tuple(nodeclass.spec.network_interfaces) if nodeclass.spec.network_interfaces else None,
            nested_virtualization=bool(cpu and cpu.nested_virtualization == "enabled"),
            connection_tracking=nodeclass.spec.connection_tracking is not None,
        )
        result = []
        group = placement.id if placement else ""
        for info in self.infos().values():
            if placement is not None and not placement.supports(info):
                continue
            offerings = self.offerings(info, subnets, unavailable, group, shifted, reserved=reserved)
            built = instancetype.build(info, settings, offerings) if offerings else None
            if built is not None:
                result.append(
                    replace(built, labels={**built.labels, wk.LABEL_PLACEMENT_GROUP_ID: group}) if group else built
                )
        return sorted(result, key=lambda it: it.name)
