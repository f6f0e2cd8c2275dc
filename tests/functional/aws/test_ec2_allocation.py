"""The embedded world's EC2 allocates as EC2 does (moto over HTTP, plain boto3): CreateFleet type instant by its
strategy over pools of finite capacity, ICE per override in Errors, instances in their override's subnet, ClientToken,
spot prices per zone. Each test uses t3 types no other test launches, so the shared world's pools are its own."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from botocore.exceptions import ClientError

from autoscaler_dev.world.aws_world import ZONES, AWSWorld
from autoscaler_dev.world.ec2_market import CapacitySettings, Pool, PoolRule

A, B, C = ZONES


def limit(monkeypatch: pytest.MonkeyPatch, world: AWSWorld, *rules: tuple[str, str, str, int]) -> None:
    """Pools (type, zone, capacity type) that hold that many instances, for this test."""
    pools = [PoolRule(instance_type=t, zone=z, capacity_type=ct, instances=n) for t, z, ct, n in rules]  # type: ignore[arg-type]
    monkeypatch.setattr(world.market, "capacity", CapacitySettings(pools=pools))


def fleet(
    world: AWSWorld,
    overrides: Sequence[tuple[str, str]],
    count: int,
    capacity_type: str = "on-demand",
    template: Mapping[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """CreateFleet (instant) over (instance type, zone) overrides, in the zones' subnets, as the provisioner asks,
    from a new launch template (its data: the image and ``template``)."""
    ec2 = world.client("ec2")
    name = f"alloc-{uuid.uuid4().hex[:8]}"
    data = {"ImageId": world.images["al2023/x86_64/standard"], **(template or {})}
    ec2.create_launch_template(LaunchTemplateName=name, LaunchTemplateData=data)  # type: ignore[arg-type]
    strategy = (
        {"SpotOptions": {"AllocationStrategy": "price-capacity-optimized"}}
        if capacity_type == "spot"
        else {"OnDemandOptions": {"AllocationStrategy": "lowest-price"}}
    )
    request = {
        "Type": "instant",
        "LaunchTemplateConfigs": [
            {
                "LaunchTemplateSpecification": {"LaunchTemplateName": name, "Version": "$Latest"},
                "Overrides": [
                    {"InstanceType": t, "SubnetId": world.subnets[z], "AvailabilityZone": z} for t, z in overrides
                ],
            }
        ],
        "TargetCapacitySpecification": {"DefaultTargetCapacityType": capacity_type, "TotalTargetCapacity": count},
        **strategy,
        **extra,
    }
    return dict(ec2.create_fleet(**request))


def launched(world: AWSWorld, answer: dict[str, Any]) -> list[dict[str, Any]]:
    ids = [i for group in answer["Instances"] for i in group["InstanceIds"]]
    if not ids:
        return []
    pages = world.client("ec2").describe_instances(InstanceIds=ids)["Reservations"]
    return [i for r in pages for i in r["Instances"]]


def where(instances: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return sorted((i["InstanceType"], i["Placement"]["AvailabilityZone"]) for i in instances)


def failed(answer: dict[str, Any]) -> list[tuple[str, str, str]]:
    return sorted(
        (
            e["ErrorCode"],
            e["LaunchTemplateAndOverrides"]["Overrides"]["InstanceType"],
            e["LaunchTemplateAndOverrides"]["Overrides"]["AvailabilityZone"],
        )
        for e in answer.get("Errors", [])
    )


def test_on_demand_lowest_price_launches_the_cheapest_override_in_its_subnet(aws_world: AWSWorld) -> None:
    answer = fleet(aws_world, [("t3.medium", A), ("t3.small", B), ("t3.large", C)], 2)
    instances = launched(aws_world, answer)
    assert where(instances) == [("t3.small", B), ("t3.small", B)]  # not the first override: the cheapest
    assert {i["SubnetId"] for i in instances} == {aws_world.subnets[B]}
    assert answer["Errors"] == []


def test_an_empty_pool_is_reported_per_override_and_the_fleet_falls_through(
    aws_world: AWSWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    limit(monkeypatch, aws_world, ("t3a.small", A, "on-demand", 0), ("t3a.small", B, "on-demand", 1))
    answer = fleet(aws_world, [("t3a.small", A), ("t3a.small", B), ("t3a.medium", C)], 3)
    assert where(launched(aws_world, answer)) == [("t3a.medium", C), ("t3a.medium", C), ("t3a.small", B)]
    assert failed(answer) == [
        ("InsufficientInstanceCapacity", "t3a.small", A),
        ("InsufficientInstanceCapacity", "t3a.small", B),
    ]
    error = answer["Errors"][0]
    assert error["Lifecycle"] == "on-demand"
    assert error["LaunchTemplateAndOverrides"]["Overrides"]["SubnetId"] in {aws_world.subnets[A], aws_world.subnets[B]}
    assert "sufficient t3a.small capacity" in error["ErrorMessage"]


def test_partial_fulfilment_launches_what_the_pools_hold(aws_world: AWSWorld, monkeypatch: pytest.MonkeyPatch) -> None:
    limit(monkeypatch, aws_world, ("t3a.nano", A, "spot", 1), ("t3a.nano", B, "spot", 1), ("t3a.nano", C, "spot", 0))
    answer = fleet(aws_world, [("t3a.nano", z) for z in ZONES], 4, "spot")
    instances = launched(aws_world, answer)
    assert where(instances) == [("t3a.nano", A), ("t3a.nano", B)]
    assert all(i.get("InstanceLifecycle") == "spot" for i in instances)
    assert failed(answer) == [("InsufficientInstanceCapacity", "t3a.nano", z) for z in ZONES]


def test_launches_deplete_a_pool_and_terminations_refill_it(
    aws_world: AWSWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    limit(monkeypatch, aws_world, ("t3a.micro", A, "on-demand", 2))
    first = launched(aws_world, fleet(aws_world, [("t3a.micro", A)], 2))
    assert len(first) == 2
    empty = fleet(aws_world, [("t3a.micro", A)], 1)
    assert empty["Instances"] == [] and failed(empty) == [("InsufficientInstanceCapacity", "t3a.micro", A)]
    aws_world.client("ec2").terminate_instances(InstanceIds=[first[0]["InstanceId"]])
    again = fleet(aws_world, [("t3a.micro", A)], 1)
    assert where(launched(aws_world, again)) == [("t3a.micro", A)] and again["Errors"] == []


def test_price_capacity_optimized_takes_the_deeper_pool_then_the_cheaper(
    aws_world: AWSWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    prices = spot_prices(aws_world, "t3.micro")
    cheap, dear = sorted(ZONES, key=prices.__getitem__)[:2]
    limit(monkeypatch, aws_world, ("t3.micro", cheap, "spot", 2), ("t3.micro", dear, "spot", 100))
    deeper = fleet(aws_world, [("t3.micro", cheap), ("t3.micro", dear)], 1, "spot")
    assert where(launched(aws_world, deeper)) == [("t3.micro", dear)]  # dearer, but far deeper
    limit(monkeypatch, aws_world, ("t3.micro", cheap, "spot", 100), ("t3.micro", dear, "spot", 100))
    cheaper = fleet(aws_world, [("t3.micro", dear), ("t3.micro", cheap)], 1, "spot")
    assert where(launched(aws_world, cheaper)) == [("t3.micro", cheap)]  # about as deep: the cheaper


def test_a_repeated_client_token_answers_the_first_call_and_a_changed_request_is_refused(aws_world: AWSWorld) -> None:
    token = f"token-{uuid.uuid4()}"
    first = fleet(aws_world, [("t3.nano", A)], 1, ClientToken=token)
    ec2 = aws_world.client("ec2")
    template = first["Instances"][0]["LaunchTemplateAndOverrides"]["LaunchTemplateSpecification"]["LaunchTemplateName"]
    same = {
        "Type": "instant",
        "ClientToken": token,
        "LaunchTemplateConfigs": [
            {
                "LaunchTemplateSpecification": {"LaunchTemplateName": template, "Version": "$Latest"},
                "Overrides": [{"InstanceType": "t3.nano", "SubnetId": aws_world.subnets[A], "AvailabilityZone": A}],
            }
        ],
        "TargetCapacitySpecification": {"DefaultTargetCapacityType": "on-demand", "TotalTargetCapacity": 1},
        "OnDemandOptions": {"AllocationStrategy": "lowest-price"},
    }
    replay = ec2.create_fleet(**same)
    assert replay["FleetId"] == first["FleetId"] and replay["Instances"] == first["Instances"]
    with pytest.raises(ClientError) as refused:
        ec2.create_fleet(
            **{**same, "TargetCapacitySpecification": {**same["TargetCapacitySpecification"], "TotalTargetCapacity": 2}}
        )
    assert refused.value.response["Error"]["Code"] == "IdempotentParameterMismatch"


def spot_prices(world: AWSWorld, instance_type: str) -> dict[str, float]:
    history = world.client("ec2").describe_spot_price_history(
        InstanceTypes=[instance_type], ProductDescriptions=["Linux/UNIX"]
    )
    return {
        e["AvailabilityZone"]: float(e["SpotPrice"])
        for e in history["SpotPriceHistory"]
        if e["AvailabilityZone"] in ZONES
    }


def test_spot_price_history_differs_by_zone_and_is_the_price_the_fleet_goes_by(aws_world: AWSWorld) -> None:
    prices = spot_prices(aws_world, "m5.large")
    assert set(prices) == set(ZONES) and len(set(prices.values())) == 3
    on_demand = aws_world.market.on_demand["m5.large"]
    assert all(0.25 * on_demand < p < 0.5 * on_demand for p in prices.values())
    for zone, price in prices.items():
        assert aws_world.market.price(Pool("m5.large", zone, "spot")) == pytest.approx(price)
