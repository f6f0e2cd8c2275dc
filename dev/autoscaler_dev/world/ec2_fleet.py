"""EC2's allocation and spot prices, in moto's server (so every client any function builds meets them).

moto's CreateFleet launches every instance into the first override, never runs out and ignores ClientToken; its
DescribeSpotPriceHistory answers $0.00001 everywhere. While a ``Market`` is registered for a server (``AWSWorld``
registers one when it starts), that server's CreateFleet of type instant allocates over the request's pools by its
strategy with the pools' free capacity (``ec2_market``), reports ``InsufficientInstanceCapacity`` per override in
``Errors``, launches each instance through moto into its override's subnet (and so its zone), and answers a repeated
ClientToken with the first answer (``IdempotentParameterMismatch`` when the request differs). A launch template that
places instances in a placement group meets the group's rules (``ec2_placement``); one that targets a capacity
reservation (``capacity-reservations-only``) launches into it only, up to its free instances, and reports
``ReservationCapacityExceeded`` past them, and an on-demand launch whose template does not say
``CapacityReservationPreference: none`` runs in a matching open reservation while it has room (``ec2_reservations``).
DescribeSpotPriceHistory answers the market's prices. Other fleet types are moto's own.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

from moto.core.responses import ActionResult
from moto.ec2.exceptions import EC2ClientError
from moto.ec2.models.instance_types import INSTANCE_TYPES
from moto.ec2.responses.fleets import Fleets
from moto.ec2.responses.spot_instances import SpotInstances

from autoscaler.providers.aws.pricing import shipped_on_demand_prices
from autoscaler_dev.world import ec2_market, ec2_placement, ec2_reservations
from autoscaler_dev.world.ec2_market import Candidate, CapacitySettings, Pool

LIVE = ("pending", "running", "stopping")  # states that hold a pool's capacity (stopped instances give it back)


@dataclass
class Market:
    """One world's pools and prices. ``seed`` fixes the spot prices' and the pools' variation."""

    zones: Sequence[str]
    seed: int = 0
    capacity: CapacitySettings = field(default_factory=CapacitySettings)
    on_demand: dict[str, float] = field(default_factory=shipped_on_demand_prices)
    answered: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)  # ClientToken -> request, answer
    lock: threading.Lock = field(default_factory=threading.Lock)
    clock: Callable[[], float] | None = None  # the run's virtual seconds, when a run has set it
    launched_at: dict[str, float] = field(default_factory=dict)  # instance id -> when its CreateFleet was called

    def price(self, pool: Pool) -> float | None:
        base = self.on_demand.get(pool.instance_type)
        if base is None or pool.capacity_type == ec2_market.ON_DEMAND:
            return base
        return ec2_market.spot_price(base, pool.instance_type, pool.zone, self.seed)

    def size(self, pool: Pool) -> int:
        """What ``pool`` holds when empty."""
        vcpus = INSTANCE_TYPES.get(pool.instance_type, {}).get("VCpuInfo", {}).get("DefaultVCpus", 2)
        return self.capacity.instances(pool, int(vcpus), self.seed)

    @staticmethod
    def live(backend: Any) -> Counter[Pool]:
        """The instances that hold capacity now, by pool."""
        return Counter(_pool_of(i) for r in backend.reservations.values() for i in r.instances if i.state in LIVE)

    def free(self, backend: Any, pools: Sequence[Pool]) -> dict[Pool, int]:
        """What each of ``pools`` has left, given the instances live in it now."""
        live = self.live(backend)
        return {pool: max(0, self.size(pool) - live[pool]) for pool in pools}


_markets: dict[str, Market] = {}
_installed = threading.Lock()
_original: dict[str, Any] = {}


def register(endpoint: str, market: Market) -> None:
    """Serve ``market`` on the moto server at ``endpoint`` (``http://host:port``)."""
    _install()
    _markets[urlparse(endpoint).netloc] = market


def unregister(endpoint: str) -> None:
    _markets.pop(urlparse(endpoint).netloc, None)


def market_of(response: Any) -> Market | None:
    return _markets.get(urlparse(getattr(response, "uri", "") or "").netloc)


def _pool_of(instance: Any) -> Pool:
    capacity_type = ec2_market.SPOT if instance.lifecycle == "spot" else ec2_market.ON_DEMAND
    return Pool(instance.instance_type, instance.placement.zone, capacity_type)


def _install() -> None:
    with _installed:
        if _original:
            return
        _original["create_fleet"] = Fleets.create_fleet
        _original["describe_spot_price_history"] = SpotInstances.describe_spot_price_history
        Fleets.create_fleet = _create_fleet  # type: ignore[method-assign]
        SpotInstances.describe_spot_price_history = _describe_spot_price_history  # type: ignore[method-assign]


def _describe_spot_price_history(self: Any) -> ActionResult:
    result: ActionResult = _original["describe_spot_price_history"](self)
    market = market_of(self)
    history: dict[str, Any] = result.result  # type: ignore[assignment]  # moto's answer, typed as object
    if market is not None:
        for entry in history["SpotPriceHistory"]:
            price = market.price(Pool(entry["InstanceType"], entry["AvailabilityZone"], ec2_market.SPOT))
            if price is not None:
                entry["SpotPrice"] = f"{price:.5f}"
    return result


def _create_fleet(self: Any) -> ActionResult:
    market = market_of(self)
    if market is None or self._get_param("Type", if_none="maintain") != "instant":
        return _original["create_fleet"](self)  # type: ignore[no-any-return]
    self.error_on_dryrun()
    params = {
        key: self._get_param(key, default)
        for key, default in (
            ("LaunchTemplateConfigs", []),
            ("TargetCapacitySpecification", {}),
            ("SpotOptions", {}),
            ("OnDemandOptions", {}),
            ("TagSpecifications", []),
            ("Context", None),
        )
    }
    token = self._get_param("ClientToken") or ""
    called = market.clock() if market.clock is not None else None  # before the allocation's own time
    digest = json.dumps(params, sort_keys=True, default=str)
    with market.lock:  # one allocation at a time: two fleets must not both take a pool's last instance
        if token in market.answered:
            asked, answer = market.answered[token]
            if asked != digest:
                raise EC2ClientError(
                    "IdempotentParameterMismatch",
                    "The client token you have provided is associated with a resource that is already deleted or "
                    "whose parameters differ. Please use a different client token.",
                )
            return ActionResult(answer)
        answer = _allocate(self, market, params)
        if token:
            market.answered[token] = (digest, answer)
        if called is not None:
            market.launched_at.update(
                (i, called) for entry in answer["Instances"] for i in entry.get("InstanceIds", [])
            )
    return ActionResult(answer)


def _allocate(response: Any, market: Market, params: dict[str, Any]) -> dict[str, Any]:
    backend = response.ec2_backend
    target = dict(params["TargetCapacitySpecification"])
    capacity_type = target.get("DefaultTargetCapacityType") or ec2_market.ON_DEMAND
    options = params["SpotOptions"] if capacity_type == ec2_market.SPOT else params["OnDemandOptions"]
    default = ec2_market.PRICE_CAPACITY_OPTIMIZED if capacity_type == ec2_market.SPOT else ec2_market.LOWEST_PRICE
    strategy = (options or {}).get("AllocationStrategy") or default
    # moto's own fleet, asked for nothing, holds the launch specs (template data merged with each override).
    fleet = backend.create_fleet(
        on_demand_options=params["OnDemandOptions"],
        spot_options=params["SpotOptions"],
        target_capacity_specification={**target, "TotalTargetCapacity": 0},
        launch_template_configs=params["LaunchTemplateConfigs"],
        excess_capacity_termination_policy=None,
        replace_unhealthy_instances=None,
        terminate_instances_with_expiration=True,
        fleet_type="instant",
        valid_from=None,
        valid_until=None,
        tag_specifications=params["TagSpecifications"],
    )
    fleet.target_capacity_specification, fleet.target_capacity = target, int(target.get("TotalTargetCapacity") or 0)
    candidates = []
    for index, spec in enumerate(fleet.launch_specs):
        override = spec.overrides or {}
        zone = override.get("AvailabilityZone") or ""
        if spec.subnet_id:
            zone = backend.get_subnet(spec.subnet_id).availability_zone
        elif zone:  # a zone without a subnet: the zone's first subnet, as EC2 picks the default one
            spec.subnet_id = next(s.id for s in backend.get_all_subnets() if s.availability_zone == zone)
        pool = Pool(spec.instance_type, zone, capacity_type)
        priority = override.get("Priority")
        candidates.append(Candidate(index, pool, market.price(pool), float(priority) if priority is not None else None))
    free = market.free(backend, [c.pool for c in candidates])
    group = next(filter(None, (ec2_placement.group_of_template(backend, s) for s in fleet.launch_specs)), None)
    refusals: dict[str, str] = {}  # zone -> the group's message when it refuses the zone
    if group is not None:
        live = ec2_placement.live_by_zone(backend, group)
        for candidate in candidates:
            left, refusals[candidate.pool.zone] = ec2_placement.room(group, live, candidate.pool.zone)
            if left is not None:
                free[candidate.pool] = min(free[candidate.pool], left)
    # A template targeting a reservation launches only into it: its room, not the pool's, bounds the override.
    targets = {i: ec2_reservations.target_of(backend, s) for i, s in enumerate(fleet.launch_specs)}
    for index, aimed in targets.items():
        if aimed is not None:
            pool = candidates[index].pool
            free[pool] = ec2_reservations.room(backend, aimed, pool.instance_type, pool.zone)
    allocation = ec2_market.allocate(candidates, fleet.target_capacity, free, strategy)
    for index, count in allocation.launches:
        spec = fleet.launch_specs[index]
        fleet.get_launch_spec_counts = lambda _weight, spec=spec, count=count: ({spec: count}, float(count))
        before = len(fleet.on_demand_instances)
        if capacity_type == ec2_market.SPOT:
            fleet.create_spot_requests(count)
        else:
            fleet.create_on_demand_requests(count)
        launched = [e["instance"] for e in fleet.on_demand_instances[before:]]
        if (aimed := targets[index]) is not None:
            ec2_reservations.record(launched, aimed)
        else:
            ec2_reservations.match_open(backend, spec, launched)
    fleet.__dict__.pop("get_launch_spec_counts", None)
    if group is not None:
        launched = [backend.get_instance(i) for entry in fleet.instances or [] for i in entry.get("InstanceIds", [])]
        ec2_placement.place(backend, group, launched)
    with_capacity = sorted({c.pool.zone for c in candidates if free[c.pool] > 0})
    errors = [
        {
            "LaunchTemplateAndOverrides": {
                "LaunchTemplateSpecification": fleet.launch_specs[index].launch_template_spec,
                "Overrides": fleet.launch_specs[index].overrides or {},
            },
            "Lifecycle": capacity_type,
            "ErrorCode": ec2_reservations.RESERVATION_FULL
            if targets[index] is not None
            else ec2_market.INSUFFICIENT_CAPACITY,
            "ErrorMessage": refusals.get(candidates[index].pool.zone)
            or ec2_market.insufficient_capacity_message(candidates[index].pool, with_capacity),
        }
        for index in allocation.insufficient
    ]
    return {"FleetId": fleet.id, "Errors": errors, "Instances": fleet.instances or []}
