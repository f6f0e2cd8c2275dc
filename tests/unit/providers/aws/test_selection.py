"""Choosing instance types, capacity type, AMIs and subnets for a launch, and the fleet request. Pure."""

from __future__ import annotations

from typing import Any

import pytest

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.common import NodeSelectorRequirementWithMinValues
from autoscaler.apis.v1.ec2nodeclass import AMIStatus
from autoscaler.cloudprovider.errors import OfferingKey
from autoscaler.cloudprovider.types import InstanceType, Offering
from autoscaler.providers.aws import fleetrequest, selection
from autoscaler.providers.aws.families import variant_requirements
from autoscaler.providers.aws.launcher import subnet_per_zone

GI = 2**30


def instance_type(name: str, prices: dict[tuple[str, str], float], cpu: int = 2000, **labels: str) -> InstanceType:
    family, _, size = name.partition(".")
    return InstanceType(
        name,
        {
            wk.LABEL_INSTANCE_TYPE: name,
            wk.LABEL_ARCH: "amd64",
            wk.LABEL_INSTANCE_FAMILY: family,
            wk.LABEL_INSTANCE_SIZE: size,
            **labels,
        },
        tuple(Offering(zone, ct, price, zone_id=f"id-{zone}") for (zone, ct), price in prices.items()),
        {
            "cpu": cpu,
            "memory": 8 * GI,
            "pods": 29,
            **({"nvidia.com/gpu": 1} if "gpu" in labels.get("kind", "") else {}),
        },
    )


def req(key: str, operator: str, *values: str, min_values: int | None = None) -> NodeSelectorRequirementWithMinValues:
    # Constructed, not validated: NodeClaims carry keys (karpenter.sh/nodepool) that NodePools may not write.
    return NodeSelectorRequirementWithMinValues.model_construct(
        key=key, operator=operator, values=list(values) or None, min_values=min_values
    )


BOTH = {("a", "spot"): 0.03, ("a", "on-demand"): 0.10, ("b", "on-demand"): 0.10}
CHEAP = instance_type("m5.large", BOTH)
BIG = instance_type("m5.4xlarge", {("a", "spot"): 0.20, ("a", "on-demand"): 0.77}, cpu=16000)
GPU = instance_type("g4dn.xlarge", {("a", "on-demand"): 0.53}, kind="gpu")
METAL = instance_type("m5.metal", {("a", "on-demand"): 4.6})
ONLY_OD = [req(wk.LABEL_CAPACITY_TYPE, "In", "on-demand")]


def test_launchable_checks_labels_requests_and_offerings_but_not_node_labels() -> None:
    requirements = [
        req(wk.LABEL_INSTANCE_FAMILY, "In", "m5"),
        req(wk.LABEL_NODEPOOL, "In", "default"),
        req("team", "In", "a"),
    ]
    assert selection.launchable([CHEAP, BIG, GPU], requirements, {"cpu": 1000}) == [CHEAP, BIG]
    assert selection.launchable([CHEAP, BIG], requirements, {"cpu": 4000}) == [BIG]
    assert selection.launchable([CHEAP], [req(wk.LABEL_ZONE, "In", "c")], {}) == []
    assert selection.launchable([CHEAP], [req(wk.LABEL_ZONE_ID, "In", "id-b")], {}) == [CHEAP]
    assert selection.launchable([GPU], [req(wk.LABEL_INSTANCE_GPU_COUNT, "DoesNotExist")], {}) == [
        GPU
    ]  # label absent here


def test_spot_only_when_allowed_and_offered() -> None:
    assert selection.capacity_type([CHEAP], []) == "spot"  # unconstrained capacity type admits spot
    assert selection.capacity_type([CHEAP], ONLY_OD) == "on-demand"
    assert selection.capacity_type([GPU], []) == "on-demand"  # no spot offering
    assert selection.capacity_type([CHEAP], [req(wk.LABEL_ZONE, "In", "b")]) == "on-demand"


def test_preferred_drops_exotic_types_and_pricey_spot_and_orders_by_price() -> None:
    assert selection.preferred([METAL, GPU, BIG, CHEAP], ONLY_OD) == [CHEAP, BIG]
    assert selection.preferred([BIG, CHEAP], []) == [CHEAP]  # BIG's spot is dearer than CHEAP on demand
    assert selection.preferred([METAL, GPU], ONLY_OD) == [GPU, METAL]  # nothing ordinary: keep them
    pricey_spot = instance_type("r5.large", {("a", "spot"): 0.5, ("a", "on-demand"): 0.9})
    assert pricey_spot not in selection.preferred([CHEAP, pricey_spot], [])  # dearer than the cheapest on-demand
    assert selection.preferred([BIG, CHEAP], ONLY_OD) == [CHEAP, BIG]
    with_min_values = [*ONLY_OD, req(wk.LABEL_INSTANCE_FAMILY, "In", "m5", "g4dn", min_values=2)]
    assert GPU in selection.preferred([GPU, CHEAP], with_min_values)


def test_at_most_sixty_types_are_offered() -> None:
    many = [instance_type(f"c{i}.large", {("a", "on-demand"): 1 + i / 100}) for i in range(80)]
    chosen = selection.preferred(many, ONLY_OD)
    assert len(chosen) == selection.MAX_INSTANCE_TYPES and chosen[0].name == "c0.large"


def test_overrides_cover_each_zone_with_its_subnet() -> None:
    overrides = selection.overrides([CHEAP], ONLY_OD, "on-demand", {"a": "subnet-a", "b": "subnet-b"}, "ami-1")
    assert [o.to_request() for o in overrides] == [
        {"InstanceType": "m5.large", "SubnetId": "subnet-a", "ImageId": "ami-1", "AvailabilityZone": "a"},
        {"InstanceType": "m5.large", "SubnetId": "subnet-b", "ImageId": "ami-1", "AvailabilityZone": "b"},
    ]
    assert selection.overrides([CHEAP], ONLY_OD, "on-demand", {"a": "subnet-a"}, "ami-1")[0].zone == "a"


def test_the_subnet_with_most_free_addresses_wins_each_zone() -> None:
    zones = {"subnet-1": "a", "subnet-2": "a", "subnet-3": "b"}
    assert subnet_per_zone(zones, {"subnet-1": 10, "subnet-2": 200, "subnet-3": 5}) == {
        "a": "subnet-2",
        "b": "subnet-3",
    }


def test_each_type_boots_the_newest_ami_whose_requirements_it_meets() -> None:
    gpu_labels = dict(GPU.labels) | {wk.LABEL_INSTANCE_GPU_COUNT: "1"}
    gpu = InstanceType(GPU.name, gpu_labels, GPU.offerings, GPU.capacity)
    amis = [
        AMIStatus(id="ami-nvidia", requirements=list(variant_requirements("nvidia"))),
        AMIStatus(id="ami-standard", requirements=list(variant_requirements("standard"))),
    ]
    assert selection.image_for(gpu, amis) == "ami-nvidia"
    assert selection.image_for(CHEAP, amis) == "ami-standard"
    assert selection.image_for(CHEAP, amis[:1]) is None


def test_client_tokens_are_stable_and_short() -> None:
    assert fleetrequest.client_token(["5b8f1f4e-uid"]) == "sk-5b8f1f4e-uid"
    merged = fleetrequest.client_token(["b", "a"])
    assert merged == fleetrequest.client_token(["a", "b"]) and len(merged) <= 64
    assert fleetrequest.client_token(["x" * 70]) != fleetrequest.client_token(["x" * 71])


def test_a_token_for_a_changed_request_differs_from_the_first_and_ignores_the_old_token() -> None:
    request = {"Type": "instant", "TargetCapacitySpecification": {"TotalTargetCapacity": 1}}
    salted = fleetrequest.client_token(["uid"], {**request, "ClientToken": "sk-uid"})
    assert salted != fleetrequest.client_token(["uid"]) and len(salted) <= 64
    assert salted == fleetrequest.client_token(["uid"], {**request, "ClientToken": "sk-other"})
    changed = {**request, "TargetCapacitySpecification": {"TotalTargetCapacity": 2}}
    assert fleetrequest.client_token(["uid"], changed) != salted


def test_fleet_request_shape() -> None:
    override = selection.Override("m5.large", "subnet-a", "a", "ami-1")
    spot = fleetrequest.fleet_request(
        [("lt", [override]), ("empty", [])], capacity_type="spot", count=3, tags={"k": "v"}, token="t"
    )
    assert spot["TargetCapacitySpecification"] == {"DefaultTargetCapacityType": "spot", "TotalTargetCapacity": 3}
    assert spot["SpotOptions"] == {"AllocationStrategy": "price-capacity-optimized"} and "OnDemandOptions" not in spot
    assert [c["LaunchTemplateSpecification"]["LaunchTemplateName"] for c in spot["LaunchTemplateConfigs"]] == ["lt"]
    assert {s["ResourceType"] for s in spot["TagSpecifications"]} == {"instance", "volume", "fleet"}
    on_demand = fleetrequest.fleet_request(
        [("lt", [override])], capacity_type="on-demand", count=1, tags={}, token="t", context="ctx"
    )
    assert on_demand["OnDemandOptions"] == {"AllocationStrategy": "lowest-price"} and on_demand["Context"] == "ctx"


def capacity_error(code: str, **override: Any) -> dict[str, Any]:
    return {"ErrorCode": code, "ErrorMessage": "m", "LaunchTemplateAndOverrides": {"Overrides": override}}


def test_capacity_failures_name_the_offerings() -> None:
    errors = [
        capacity_error("InsufficientInstanceCapacity", InstanceType="m5.large", AvailabilityZone="a"),
        capacity_error("UnfulfillableCapacity", InstanceType="c5.large", SubnetId="subnet-b"),
        capacity_error("InvalidParameterValue", InstanceType="r5.large", AvailabilityZone="a"),
    ]
    failed = fleetrequest.capacity_failures(errors, "spot", {"subnet-b": "b"})
    assert failed == [OfferingKey("c5.large", "b", "spot"), OfferingKey("m5.large", "a", "spot")]
    assert "InvalidParameterValue" in fleetrequest.error_summary(errors)


@pytest.mark.parametrize(
    ("operator", "values", "label", "expected"),
    [
        ("In", ["a"], "a", True),
        ("In", ["a"], None, False),
        ("NotIn", ["a"], None, True),
        ("Exists", None, "x", True),
        ("DoesNotExist", None, "x", False),
        ("Gt", ["4"], "8", True),
        ("Lt", ["4"], "8", False),
        ("Gte", ["8"], "8", True),
        ("Lte", ["7"], "8", False),
        ("Gt", ["4"], "not-a-number", False),
    ],
)
def test_requirement_operators(operator: str, values: list[str] | None, label: str | None, expected: bool) -> None:
    from autoscaler.cloudprovider.requirements import satisfies

    assert satisfies(label, operator, values) is expected
