"""What the lower bound of a run's cost may buy: the instance types and capacity types each NodePool allows, at the
prices the provisioner sees (``costbound`` takes it from there)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.nodepool import NodePool
from autoscaler.cloudprovider.errors import CloudProviderError
from autoscaler.scheduling.requirements import Requirements
from autoscaler_dev.world import costbound
from autoscaler_dev.world.scenario import Scenario

if TYPE_CHECKING:
    from autoscaler_dev.world.runner import World

# The paid options of the lower bound, and the reservations offered (id -> allocatable CPU and memory of its type).
CostOptions = tuple[list[costbound.Option], dict[str, tuple[float, float]]]


def paid_options(sim: World, scenario: Scenario, nodepools: list[NodePool]) -> CostOptions:
    """The paid options, and the reservations offered (id -> its type's allocatable CPU and memory): those are
    free capacity of a bounded amount, not an option to buy more of (``reserved_cost``)."""
    cluster = sim.embedded.cluster()
    provider = sim.embedded.provider(cluster.nodeclass, scenario.instance_types)
    options = []
    offered: dict[str, tuple[float, float]] = {}
    for pool in nodepools:
        allowed = Requirements.from_selector(r.to_dict() for r in pool.spec.template.spec.requirements)
        capacity_types = allowed.get(wk.LABEL_CAPACITY_TYPE)
        try:
            types = provider.instance_types(pool)
        except CloudProviderError:
            continue
        for it in types:
            if any(key in it.labels and not req.has(it.labels[key]) for key, req in allowed.items()):
                continue
            allowed_offerings = [
                o for o in it.offerings if capacity_types is None or capacity_types.has(o.capacity_type)
            ]
            allocatable = it.allocatable
            each = (float(allocatable.get("cpu", 0)), float(allocatable.get("memory", 0)))
            offered.update({o.reservation.id: each for o in allowed_offerings if o.reservation is not None})
            prices = [o.price for o in allowed_offerings if o.available and o.reservation is None]
            if prices:
                options.append(costbound.Option(*each, min(prices)))
    return options, offered
