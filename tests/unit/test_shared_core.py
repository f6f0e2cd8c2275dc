"""Resources, conditions, the unavailable-offerings cache and settings: the small shared pieces."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from autoscaler.apis.resources import add, fits, format_resources, maximum, parse_resources, subtract
from autoscaler.apis.v1.conditions import get_condition, is_true, roll_up_ready, set_condition
from autoscaler.cloudprovider import InstanceType, InstanceTypeOverhead, Offering, OfferingKey
from autoscaler.cloudprovider.unavailable import InMemoryUnavailableOfferings
from autoscaler.settings import FeatureGates, Settings, SettingsError

T0 = datetime(2026, 11, 30, 4, 0, tzinfo=UTC)


def test_resources_round_trip_in_canonical_units() -> None:
    parsed = parse_resources({"cpu": "1500m", "memory": "1Gi", "pods": "110", "nvidia.com/gpu": 1})
    assert parsed == {"cpu": 1500, "memory": 2**30, "pods": 110, "nvidia.com/gpu": 1}
    assert format_resources(parsed) == {"cpu": "1500m", "memory": "1Gi", "pods": "110", "nvidia.com/gpu": "1"}
    assert add({"cpu": 1}, {"cpu": 2, "memory": 3}) == {"cpu": 3, "memory": 3}
    assert subtract({"cpu": 5}, {"cpu": 2, "pods": 1}) == {"cpu": 3, "pods": -1}
    assert maximum([{"cpu": 1, "memory": 9}, {"cpu": 4}]) == {"cpu": 4, "memory": 9}
    assert fits({"cpu": 2, "memory": 0}, {"cpu": 2})
    assert not fits({"nvidia.com/gpu": 1}, {"cpu": 64})


def test_instance_type_allocatable_and_cheapest_offering() -> None:
    instance_type = InstanceType(
        name="m5.large",
        labels={"node.kubernetes.io/instance-type": "m5.large"},
        offerings=(
            Offering("us-east-1a", "spot", 0.04),
            Offering("us-east-1b", "spot", 0.03, available=False),
            Offering("us-east-1a", "on-demand", 0.096),
        ),
        capacity={"cpu": 2000, "memory": 8 * 2**30, "pods": 29},
        overhead=InstanceTypeOverhead(kube_reserved={"cpu": 70}, eviction_threshold={"memory": 100 * 2**20}),
    )
    assert instance_type.allocatable == {"cpu": 1930, "memory": 8 * 2**30 - 100 * 2**20, "pods": 29}
    assert instance_type.cheapest_price() == 0.04
    assert instance_type.cheapest_price(frozenset({"on-demand"})) == 0.096
    assert instance_type.cheapest_price(zones=frozenset({"us-east-1c"})) == float("inf")


def test_conditions_keep_transition_time_until_status_changes() -> None:
    conditions = set_condition(None, "Launched", "True", "Launched", "", now=T0)
    later = set_condition(conditions, "Launched", "True", "Launched", "again", now=T0 + timedelta(hours=1))
    assert get_condition(later, "Launched").last_transition_time == "2026-11-30T04:00:00Z"  # type: ignore[union-attr]
    flipped = set_condition(later, "Launched", "False", "Gone", "", now=T0 + timedelta(hours=2))
    assert get_condition(flipped, "Launched").last_transition_time == "2026-11-30T06:00:00Z"  # type: ignore[union-attr]
    assert len(flipped) == 1 and not is_true(flipped, "Launched")


def test_ready_rolls_up_dependents() -> None:
    dependents = ("SubnetsReady", "AMIsReady")
    conditions = set_condition(None, "SubnetsReady", "True", "", "", now=T0)
    assert get_condition(roll_up_ready(conditions, dependents, now=T0), "Ready").status == "Unknown"  # type: ignore[union-attr]
    conditions = set_condition(conditions, "AMIsReady", "False", "AMINotFound", "no AMI matched", now=T0)
    ready = get_condition(roll_up_ready(conditions, dependents, now=T0), "Ready")
    assert ready is not None and (ready.status, ready.reason) == ("False", "AMIsReadyNotReady")
    assert "no AMI matched" in (ready.message or "")
    conditions = set_condition(conditions, "AMIsReady", "True", "", "", now=T0)
    assert is_true(roll_up_ready(conditions, dependents, now=T0), "Ready")


def test_unavailable_offerings_expire() -> None:
    now = [T0]
    cache = InMemoryUnavailableOfferings(clock=lambda: now[0])
    key = OfferingKey("m5.large", "us-east-1a", "spot")
    cache.mark_unavailable(key, "InsufficientInstanceCapacity")
    assert cache.unavailable() == {key}
    now[0] = T0 + timedelta(minutes=2, seconds=59)
    assert key in cache.unavailable()
    now[0] = T0 + timedelta(minutes=3)
    assert cache.unavailable() == frozenset()


def test_settings_from_environment() -> None:
    settings = Settings.from_env({"CLUSTER_NAME": "demo", "AWS_REGION": "eu-west-1", "ISOLATED_VPC": "TRUE"})
    assert (settings.cluster_name, settings.region, settings.isolated_vpc) == ("demo", "eu-west-1", True)
    assert settings.vm_memory_overhead_percent == 0.075
    with pytest.raises(SettingsError, match="CLUSTER_NAME is required"):
        Settings.from_env({})
    with pytest.raises(SettingsError, match="fraction"):
        Settings.from_env({"CLUSTER_NAME": "demo", "VM_MEMORY_OVERHEAD_PERCENT": "7.5"})


def test_feature_gates_turn_spot_to_spot_consolidation_on_and_reject_garbage() -> None:
    base = {"CLUSTER_NAME": "demo"}
    assert Settings.from_env(base).spot_to_spot_consolidation is False
    gates = {**base, "FEATURE_GATES": "SpotToSpotConsolidation=true, NodeRepair=false"}
    assert Settings.from_env(gates).spot_to_spot_consolidation is True
    with pytest.raises(SettingsError, match="SpotToSpotConsolidation=yes"):
        Settings.from_env({**base, "FEATURE_GATES": "SpotToSpotConsolidation=yes"})


def test_feature_gates_have_karpenters_names_and_defaults() -> None:
    gates = Settings.from_env({"CLUSTER_NAME": "demo"}).feature_gates
    assert {name: gates.enabled(name) for name in _GATES} == {
        "NodeRepair": False,
        "ReservedCapacity": True,
        "SpotToSpotConsolidation": False,
        "NodeOverlay": False,
        "StaticCapacity": False,
        "CapacityBuffer": False,
    }
    chosen = FeatureGates.parse("StaticCapacity=true,ReservedCapacity=false,SomethingNew=true")  # unknown: ignored
    assert (chosen.static_capacity, chosen.reserved_capacity, chosen.node_overlay) == (True, False, False)
    assert FeatureGates.parse(chosen.to_flag()) == chosen


_GATES = (
    "NodeRepair",
    "ReservedCapacity",
    "SpotToSpotConsolidation",
    "NodeOverlay",
    "StaticCapacity",
    "CapacityBuffer",
)


def test_instance_types_narrow_the_catalogue_when_set() -> None:
    base = {"CLUSTER_NAME": "demo"}
    assert Settings.from_env(base).instance_types == ()  # every type
    narrowed = Settings.from_env({**base, "INSTANCE_TYPES": "m5.large, c6g.*,,"})
    assert narrowed.instance_types == ("m5.large", "c6g.*")
