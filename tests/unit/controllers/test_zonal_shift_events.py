"""ZonalShiftActive / ZonalShiftCleared on NodePools: the decision (which pools hear of which zone) and the step
of the provisioner's pass that keeps the previous set and publishes, with the read-error metric."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from autoscaler import metrics as m
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.ec2nodeclass import EC2NodeClass
from autoscaler.apis.v1.nodepool import NodePool
from autoscaler.cloudprovider.unavailable import InMemoryUnavailableOfferings
from autoscaler.cloudprovider.zonalshift import ShiftedZones
from autoscaler.controllers.provisioner_pass import ProvisionerPass
from autoscaler.controllers.provisioning.events import EventThrottle
from autoscaler.controllers.zonalshift import (
    ZONAL_SHIFT_ACTIVE,
    ZONAL_SHIFT_CLEARED,
    ZonalShiftController,
    pool_zones,
    zonal_shift_events,
)
from autoscaler.kube.port import Event
from tests.support.memory_cluster import MemoryCluster
from tests.unit.controllers.lifecycle_doubles import NOW, FakeCloud
from tests.unit.controllers.provisioning_doubles import FakeCatalogue, nodepool, ready_nodeclass

ZONES = {"usw2-az1": "us-west-2a", "usw2-az2": "us-west-2b", "usw2-az3": "us-west-2c"}
AZ1, AZ2 = frozenset({"usw2-az1"}), frozenset({"usw2-az2"})


def nodeclass(name: str = "default", zones: dict[str, str] = ZONES) -> EC2NodeClass:
    body = ready_nodeclass(name).to_dict()
    body["status"]["subnets"] = [{"id": f"subnet-{i}", "zone": z, "zoneID": i} for i, z in zones.items()]
    return EC2NodeClass.model_validate(body)


def pool(name: str, *requirements: dict[str, Any], nodeclass: str = "default") -> NodePool:
    return nodepool(name, nodeclass, template_spec={"requirements": list(requirements)})


def zone_in(*zones: str, key: str = wk.LABEL_ZONE) -> dict[str, Any]:
    return {"key": key, "operator": "In", "values": list(zones)}


def published(events: list[Event]) -> list[tuple[str, str, str]]:
    return [(e.regarding.name, e.reason, e.type) for e in events]


def decide(previous: frozenset[str], current: frozenset[str], *pools: NodePool) -> list[tuple[str, str, str]]:
    return published(zonal_shift_events(previous, current, pool_zones(pools, [nodeclass()])))


def test_a_new_shift_warns_every_pool_that_could_launch_there_and_names_the_zone_and_its_id() -> None:
    events = zonal_shift_events(
        frozenset(), AZ1, pool_zones([pool("any"), pool("a", zone_in("us-west-2a"))], [nodeclass()])
    )
    assert published(events) == [("any", ZONAL_SHIFT_ACTIVE, "Warning"), ("a", ZONAL_SHIFT_ACTIVE, "Warning")]
    assert all("us-west-2a (usw2-az1)" in e.message for e in events)
    assert events[0].regarding.kind == "NodePool" and events[0].regarding.uid == "uid-any"


def test_a_pool_restricted_to_other_zones_hears_nothing() -> None:
    others = pool("bc", zone_in("us-west-2b", "us-west-2c"))
    not_a = pool("not-a", {"key": wk.LABEL_ZONE, "operator": "NotIn", "values": ["us-west-2a"]})
    by_id = pool("by-id", zone_in("usw2-az2", key=wk.LABEL_ZONE_ID))
    assert decide(frozenset(), AZ1, others, not_a, by_id) == []
    assert decide(AZ1, frozenset(), others, not_a, by_id) == []
    assert decide(frozenset(), AZ2, others, not_a, by_id) == [
        ("bc", ZONAL_SHIFT_ACTIVE, "Warning"),
        ("not-a", ZONAL_SHIFT_ACTIVE, "Warning"),
        ("by-id", ZONAL_SHIFT_ACTIVE, "Warning"),
    ]


def test_a_zone_the_class_has_no_subnet_in_concerns_none_of_its_pools() -> None:
    pools = pool_zones([pool("default")], [nodeclass(zones={"usw2-az2": "us-west-2b"})])
    assert zonal_shift_events(frozenset(), AZ1, pools) == []
    assert published(zonal_shift_events(frozenset(), AZ2, pools)) == [("default", ZONAL_SHIFT_ACTIVE, "Warning")]


def test_a_pool_whose_class_is_missing_is_left_out_and_one_unresolved_has_no_zone() -> None:
    unresolved = EC2NodeClass.model_validate({**ready_nodeclass("bare").to_dict(), "status": None})
    pools = pool_zones([pool("gone", nodeclass="missing"), pool("bare", nodeclass="bare")], [unresolved])
    assert [p.nodepool.name for p in pools] == ["bare"]
    assert zonal_shift_events(frozenset(), AZ1, pools) == []


def test_a_cleared_zone_is_a_normal_event_and_an_unchanged_one_is_silent() -> None:
    both = AZ1 | AZ2
    assert decide(both, AZ2, pool("default")) == [("default", ZONAL_SHIFT_CLEARED, "Normal")]
    assert decide(both, both, pool("default")) == []
    assert decide(AZ1, AZ2, pool("default")) == [
        ("default", ZONAL_SHIFT_ACTIVE, "Warning"),
        ("default", ZONAL_SHIFT_CLEARED, "Normal"),
    ]


@dataclass
class ShiftingCloud(FakeCatalogue, FakeCloud):
    """The pass's cloud, answering the scripted zonal-shift readings in turn (the last one repeats)."""

    answers: dict[str, Any] = field(default_factory=dict)
    readings: list[ShiftedZones] = field(default_factory=list)

    def shifted_zones(self) -> ShiftedZones:
        return self.readings.pop(0) if len(self.readings) > 1 else self.readings[0]


def test_the_controller_announces_each_change_once_and_keeps_the_previous_set() -> None:
    cluster = MemoryCluster(pool("default"), pool("bc", zone_in("us-west-2b", "us-west-2c")), nodeclass())
    cloud = ShiftingCloud(readings=[ShiftedZones(AZ1), ShiftedZones(AZ1), ShiftedZones(frozenset())])
    controller = ZonalShiftController(cluster, cloud)

    def step() -> list[tuple[str, str, str]]:
        before = len(cluster.events)
        controller.reconcile(cluster.nodepools(), cluster.nodeclasses())
        return published(cluster.events[before:])

    assert step() == [("default", ZONAL_SHIFT_ACTIVE, "Warning")]
    assert step() == []  # still shifted: nothing new
    assert step() == [("default", ZONAL_SHIFT_CLEARED, "Normal")]
    assert step() == []


def test_a_cold_start_announces_a_shift_still_active_again() -> None:
    cluster = MemoryCluster(pool("default"), nodeclass())
    cloud = ShiftingCloud(readings=[ShiftedZones(AZ1)])
    for _ in range(2):  # two containers, each with its own controller
        ZonalShiftController(cluster, cloud).reconcile(cluster.nodepools(), cluster.nodeclasses())
    assert published(cluster.events) == [("default", ZONAL_SHIFT_ACTIVE, "Warning")] * 2


@pytest.mark.parametrize("errors", [0, 3])
def test_the_pass_publishes_the_events_and_counts_failed_arc_reads(errors: int) -> None:
    cluster = MemoryCluster(pool("default"), nodeclass(), clock=lambda: NOW)
    cloud = ShiftingCloud(readings=[ShiftedZones(AZ1, errors)])
    run = ProvisionerPass(cluster, cloud, InMemoryUnavailableOfferings(), clock=lambda: NOW, throttle=EventThrottle())
    result = run.run()
    assert published(cluster.events) == [("default", ZONAL_SHIFT_ACTIVE, "Warning")]
    counted = [p.value for p in result.metric_points() if p.name == m.ZONAL_SHIFT_READ_ERRORS]
    assert counted == ([errors] if errors else [])
    assert result.summary()["zonal_shift"] == {
        "shifted": ["usw2-az1"],
        "events": [f"{ZONAL_SHIFT_ACTIVE} default"],
        "read_errors": errors,
    }
