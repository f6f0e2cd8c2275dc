"""A launch that follows a NodeOverlay's prices, against moto over HTTP and the world's EC2 Fleet allocation:
Karpenter's prioritized strategies with each override's overlaid price as its priority."""

from __future__ import annotations

from typing import Any

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.apis.v1alpha1 import NodeOverlay
from autoscaler.cloudprovider.errors import InsufficientCapacityError, OfferingKey
from autoscaler.cloudprovider.overlays import Overlays, evaluate
from autoscaler_dev.world.aws_world import ZONES, AWSWorld
from tests.functional.aws.helpers import claim, provider
from tests.functional.aws.test_launch import AMD64, ON_DEMAND, recorded_fleets
from tests.unit.scheduling.builders import nodepool

PAIR = ("m5.large", "m5.xlarge")
LICENSE = "example.com/license"


def offered(cloud: Any) -> list[Any]:
    return [it for it in cloud.instance_types(nodepool("default")) if it.name in PAIR]


def overlaid(cloud: Any, name: str) -> Overlays:
    """An overlay pricing ``name`` at 9.99 everywhere, evaluated for NodePool ``default``."""
    overlay = NodeOverlay.model_validate(
        {
            "metadata": {"name": "dear"},
            "spec": {
                "requirements": [{"key": wk.LABEL_INSTANCE_TYPE, "operator": "In", "values": [name]}],
                "price": "9.99",
            },
        }
    )
    return evaluate([overlay], [(nodepool("default"), offered(cloud))])


def licensing(cloud: Any) -> Overlays:
    """An overlay giving PAIR[1] two of the LICENSE resource, evaluated for NodePool ``default``."""
    overlay = NodeOverlay.model_validate(
        {
            "metadata": {"name": "license"},
            "spec": {
                "requirements": [{"key": wk.LABEL_INSTANCE_TYPE, "operator": "In", "values": [PAIR[1]]}],
                "capacity": {LICENSE: "2"},
            },
        }
    )
    return evaluate([overlay], [(nodepool("default"), offered(cloud))])


def pair_claim(name: str, *requirements: tuple[str, str, list[str]], annotated: bool) -> NodeClaim:
    found = claim(name, "default", *requirements, AMD64, (wk.LABEL_INSTANCE_TYPE, "In", list(PAIR)))
    if annotated:  # as the scheduler marks a NodeClaim whose options an overlay priced
        found.metadata.annotations = {wk.ANNOTATION_PRICE_OVERLAY_APPLIED: "true"}
    return found


def on_demand_prices(cloud: Any) -> dict[str, float]:
    return {it.name: it.cheapest_price(frozenset({wk.CAPACITY_TYPE_ON_DEMAND})) for it in offered(cloud)}


def type_of(launched: object) -> str:
    assert isinstance(launched, NodeClaim), launched
    return (launched.metadata.labels or {})[wk.LABEL_INSTANCE_TYPE]


def overrides(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [o for config in request["LaunchTemplateConfigs"] for o in config["Overrides"]]


def test_without_an_overlay_the_fleet_takes_the_type_ec2_sells_cheaper(aws_world: AWSWorld) -> None:
    cloud = provider(aws_world, aws_world.nodeclass("default"))
    fleets = recorded_fleets(cloud)
    prices = on_demand_prices(cloud)
    (launched,) = cloud.create_many([pair_claim("overlay-plain", ON_DEMAND, annotated=False)])
    assert type_of(launched) == min(prices, key=prices.__getitem__)
    assert fleets[0]["OnDemandOptions"] == {"AllocationStrategy": "lowest-price"}
    assert all("Priority" not in o for o in overrides(fleets[0]))


def test_a_priced_nodeclaim_launches_by_the_overlaid_price(aws_world: AWSWorld) -> None:
    cloud = provider(aws_world, aws_world.nodeclass("default"))
    fleets = recorded_fleets(cloud)
    prices = on_demand_prices(cloud)
    cheaper, dearer = sorted(prices, key=prices.__getitem__)
    (launched,) = cloud.create_many([pair_claim("overlay-priced", ON_DEMAND, annotated=True)], overlaid(cloud, cheaper))

    assert fleets[0]["OnDemandOptions"] == {"AllocationStrategy": "prioritized"}
    assert {o["InstanceType"]: o["Priority"] for o in overrides(fleets[0])} == {cheaper: 9.99, dearer: prices[dearer]}
    assert type_of(launched) == dearer


def test_an_unmarked_nodeclaim_keeps_lowest_price_even_with_overlays(aws_world: AWSWorld) -> None:
    # Karpenter keys the strategy on the NodeClaim's mark, not on whether overlays exist.
    cloud = provider(aws_world, aws_world.nodeclass("default"))
    fleets = recorded_fleets(cloud)
    cloud.create_many([pair_claim("overlay-unmarked", ON_DEMAND, annotated=False)], overlaid(cloud, PAIR[0]))
    assert fleets[0]["OnDemandOptions"] == {"AllocationStrategy": "lowest-price"}


def test_spot_follows_the_overlay_with_capacity_optimized_prioritized(aws_world: AWSWorld) -> None:
    cloud = provider(aws_world, aws_world.nodeclass("default"))
    fleets = recorded_fleets(cloud)
    spot = (wk.LABEL_CAPACITY_TYPE, "In", [wk.CAPACITY_TYPE_SPOT])
    (launched,) = cloud.create_many([pair_claim("overlay-spot", spot, annotated=True)], overlaid(cloud, PAIR[0]))
    assert fleets[0]["SpotOptions"] == {"AllocationStrategy": "capacity-optimized-prioritized"}
    assert {o["InstanceType"]: o["Priority"] for o in overrides(fleets[0]) if o["InstanceType"] == PAIR[0]}
    assert all(o["Priority"] == 9.99 for o in overrides(fleets[0]) if o["InstanceType"] == PAIR[0])
    assert type_of(launched) == PAIR[1]


def test_a_capacity_overlay_s_resource_is_launchable_and_on_the_launched_nodeclaim(aws_world: AWSWorld) -> None:
    cloud = provider(aws_world, aws_world.nodeclass("default"))
    licensed = claim("overlay-licensed", "default", ON_DEMAND, AMD64, requests={"cpu": "1", LICENSE: "1"})
    (refused,) = cloud.create_many([licensed])  # no type EC2 sells has the resource
    assert isinstance(refused, InsufficientCapacityError)
    (launched,) = cloud.create_many([licensed], licensing(cloud))
    assert type_of(launched) == PAIR[1]
    assert isinstance(launched, NodeClaim) and launched.status is not None
    assert (launched.status.capacity or {}).get(LICENSE) == "2"


def test_a_relaunch_whose_type_is_no_longer_a_candidate_keeps_its_overlaid_capacity(aws_world: AWSWorld) -> None:
    # A pass launched it and lost its status write; its offering was marked unavailable before the next pass, which
    # gets the tagged instance back and must describe it as its NodePool sees it: with the overlay's resource.
    cloud = provider(aws_world, aws_world.nodeclass("default"))
    licensed = claim("overlay-relaunched", "default", ON_DEMAND, AMD64, requests={"cpu": "1", LICENSE: "1"})
    overlays = licensing(cloud)
    (first,) = cloud.create_many([licensed], overlays)
    for zone in ZONES:
        cloud.aws.unavailable.mark_unavailable(OfferingKey(type_of(first), zone, "on-demand"), "test")
    (again,) = cloud.create_many([licensed], overlays)
    assert isinstance(again, NodeClaim) and again.status is not None and isinstance(first, NodeClaim)
    assert again.status.provider_id == first.status.provider_id  # type: ignore[union-attr]
    assert (again.status.capacity or {}).get(LICENSE) == "2"
