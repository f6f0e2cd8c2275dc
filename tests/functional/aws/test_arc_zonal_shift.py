"""ARC zonal shift as the moto world serves it (moto has none): the operator's calls, ARC's errors, and the
functions' adapter reading the cluster's shifts through it."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from botocore.exceptions import ClientError

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.nodepool import NodePool
from autoscaler.cloudprovider.errors import InsufficientCapacityError
from autoscaler.cloudprovider.zonalshift import ShiftedZones
from autoscaler.providers.aws.zonalshift import ZONAL_SHIFT_TTL, ArcZonalShifts
from autoscaler.runtime import cloud_provider
from autoscaler_dev.world.aws_world import INSTANCE_TYPES, AWSWorld
from tests.functional.aws.helpers import claim, unique
from tests.functional.aws.test_launch import AMD64, ON_DEMAND
from tests.support.iam_gates import gated, synthesized, without_action


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 3, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock(aws_world: AWSWorld) -> Iterator[Clock]:
    clock, saved = Clock(), aws_world.zonal_shifts.clock
    aws_world.zonal_shifts.clock = clock
    yield clock
    # The world is shared: leave no shift, not even an expired one (another test's clock may start before it).
    shifts = aws_world.zonal_shifts.shifts
    for shift_id in [i for i, s in shifts.items() if s.resource == aws_world.cluster_arn]:
        del shifts[shift_id]
    aws_world.zonal_shifts.clock = saved


def nodepool(nodeclass: str) -> NodePool:
    return NodePool.model_validate(
        {
            "metadata": {"name": "zonal"},
            "spec": {
                "template": {
                    "spec": {
                        "nodeClassRef": {"group": wk.AWS_GROUP, "kind": "EC2NodeClass", "name": nodeclass},
                        "requirements": [],
                    }
                }
            },
        }
    )


def _code(error: pytest.ExceptionInfo[ClientError]) -> tuple[str, str]:
    return str(error.value.response["Error"]["Code"]), str(error.value.response.get("reason", ""))


def test_a_shift_is_started_read_listed_and_cancelled(aws_world: AWSWorld, clock: Clock) -> None:
    arc, arn, zone = aws_world.client("arc-zonal-shift"), aws_world.cluster_arn, aws_world.zone_id("us-west-2a")
    started = arc.start_zonal_shift(resourceIdentifier=arn, awayFrom=zone, expiresIn="30m", comment="drill")
    assert started["status"] == "ACTIVE" and started["expiryTime"] == clock.now + timedelta(minutes=30)
    resource = arc.get_managed_resource(resourceIdentifier=arn)
    assert [(s["awayFrom"], s["appliedStatus"]) for s in resource["zonalShifts"]] == [(zone, "APPLIED")]
    listed = arc.list_zonal_shifts(resourceIdentifier=arn, status="ACTIVE")["items"]
    assert [s["zonalShiftId"] for s in listed] == [started["zonalShiftId"]]
    assert arc.cancel_zonal_shift(zonalShiftId=started["zonalShiftId"])["status"] == "CANCELED"
    assert arc.get_managed_resource(resourceIdentifier=arn)["zonalShifts"] == []
    with pytest.raises(ClientError) as again:
        arc.cancel_zonal_shift(zonalShiftId=started["zonalShiftId"])
    assert _code(again)[0] == "ConflictException"


def test_a_shift_expires_on_the_worlds_clock(aws_world: AWSWorld, clock: Clock) -> None:
    arc, arn = aws_world.client("arc-zonal-shift"), aws_world.cluster_arn
    arc.start_zonal_shift(resourceIdentifier=arn, awayFrom=aws_world.zone_id("us-west-2b"), expiresIn="1h", comment="x")
    clock.now += timedelta(hours=1)
    assert arc.get_managed_resource(resourceIdentifier=arn)["zonalShifts"] == []


def test_arcs_errors(aws_world: AWSWorld, clock: Clock) -> None:
    arc, arn = aws_world.client("arc-zonal-shift"), aws_world.cluster_arn
    with pytest.raises(ClientError) as unknown:
        arc.get_managed_resource(resourceIdentifier=arn.replace("cluster/world", "cluster/other"))
    assert _code(unknown)[0] == "ResourceNotFoundException"
    with pytest.raises(ClientError) as name_not_id:  # ARC takes zone IDs, not names
        arc.start_zonal_shift(resourceIdentifier=arn, awayFrom="us-west-2a", expiresIn="1h", comment="x")
    assert _code(name_not_id)[0] == "ValidationException"
    with pytest.raises(ClientError) as too_long:
        arc.start_zonal_shift(
            resourceIdentifier=arn, awayFrom=aws_world.zone_id("us-west-2a"), expiresIn="73h", comment="x"
        )
    assert _code(too_long)[0] == "ValidationException"
    arc.start_zonal_shift(resourceIdentifier=arn, awayFrom=aws_world.zone_id("us-west-2a"), expiresIn="1h", comment="x")
    with pytest.raises(ClientError) as second:
        arc.start_zonal_shift(
            resourceIdentifier=arn, awayFrom=aws_world.zone_id("us-west-2b"), expiresIn="1h", comment="x"
        )
    assert _code(second)[0] == "ConflictException"


def test_the_adapter_reads_shifts_and_autoshifts_by_zone_id(aws_world: AWSWorld, clock: Clock) -> None:
    shifts = ArcZonalShifts(aws_world.clients(), lambda: aws_world.cluster_arn, clock)
    assert shifts.shifted_away() == frozenset()
    auto = aws_world.zonal_shifts.autoshift(aws_world.cluster_arn, aws_world.zone_id("us-west-2c"))
    assert shifts.shifted_away() == frozenset()  # the answer is kept for the TTL
    clock.now += ZONAL_SHIFT_TTL
    assert shifts.shifted_away() == {aws_world.zone_id("us-west-2c")} == {"usw2-az3"}
    aws_world.zonal_shifts.cancel(auto.id)
    clock.now += ZONAL_SHIFT_TTL
    assert shifts.shifted_away() == frozenset() and shifts.read_errors() == 0


def test_the_adapter_counts_an_unknown_cluster_as_a_read_error(aws_world: AWSWorld, clock: Clock) -> None:
    shifts = ArcZonalShifts(aws_world.clients(), lambda: aws_world.cluster_arn + "-gone", clock)
    assert shifts.shifted_away() == frozenset() and shifts.read_errors() == 1


def test_a_shifted_zone_gets_no_launch_while_the_shift_lasts(aws_world: AWSWorld) -> None:
    """With enableZonalShift, the provider's offerings in the shifted zone are unavailable for launches: a NodeClaim
    that may go anywhere lands elsewhere, one pinned to the zone cannot launch; without the setting ARC is not read.
    The port's reading for the pass's events (``shifted_zones``) names the same zone."""
    nodeclass = aws_world.nodeclass("zonal")
    settings = aws_world.settings(instance_types=INSTANCE_TYPES, enable_zonal_shift=True)
    cloud = cloud_provider(settings, {"zonal": nodeclass}.get, clients=aws_world.clients())
    shift = aws_world.zonal_shifts.start(aws_world.cluster_arn, aws_world.zone_id("us-west-2a"), "1h", "drill")
    try:
        types = cloud.instance_types(nodepool("zonal"))
        in_a = [o.available for t in types for o in t.offerings if o.zone == "us-west-2a"]
        assert in_a and not any(in_a)
        assert any(o.available for t in types for o in t.offerings if o.zone == "us-west-2b")
        anywhere = cloud.create(claim(unique("shifted"), "zonal", ON_DEMAND, AMD64))
        assert (anywhere.metadata.labels or {})[wk.LABEL_ZONE] != "us-west-2a"
        with pytest.raises(InsufficientCapacityError):
            cloud.create(claim(unique("pinned"), "zonal", ON_DEMAND, AMD64, (wk.LABEL_ZONE, "In", ["us-west-2a"])))
        off = cloud_provider(
            aws_world.settings(instance_types=INSTANCE_TYPES), {"zonal": nodeclass}.get, clients=aws_world.clients()
        )
        assert all(
            o.available for t in off.instance_types(nodepool("zonal")) for o in t.offerings if o.zone == "us-west-2a"
        )
        # The pass's reading through the port: the zone ID, no failed read; without the setting, nothing.
        assert cloud.shifted_zones() == ShiftedZones(frozenset({aws_world.zone_id("us-west-2a")}), 0)
        assert off.shifted_zones() == ShiftedZones()
    finally:
        aws_world.zonal_shifts.cancel(shift.id)


@pytest.mark.parametrize("granted", [True, False])
def test_the_provisioner_may_read_its_own_cluster_s_shifts_only(aws_world: AWSWorld, granted: bool) -> None:
    """The synthesized provisioner role, enforced: GetManagedResource on this cluster is allowed; without the
    statement the read is denied, counted as a read error, and no zone is taken as shifted."""
    stack = synthesized()
    cut = stack if granted else without_action(stack, "provisioner", "arc-zonal-shift:GetManagedResource")
    clients, iam = gated(aws_world, cut, "provisioner")
    shifts = ArcZonalShifts(clients, lambda: aws_world.cluster_arn)
    assert shifts.shifted_away() == frozenset()
    assert shifts.read_errors() == (0 if granted else 1)
    assert iam.denied == (0 if granted else 1)
    other = ArcZonalShifts(clients, lambda: aws_world.cluster_arn.replace("cluster/world", "cluster/other"))
    other.shifted_away()
    assert other.read_errors() == 1 and iam.denied == (1 if granted else 2)  # another cluster's: never allowed
