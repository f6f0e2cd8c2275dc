"""The zonal-shift adapter over ARC's GetManagedResource answers (botocore's Stubber stands in for ARC): which
shifts count, how long an answer is kept, and what a failed read leaves."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
from botocore.stub import Stubber

from autoscaler.cloudprovider.zonalshift import NoZonalShifts, ShiftedZones
from autoscaler.providers.aws.clients import AWSClients
from autoscaler.providers.aws.zonalshift import ZONAL_SHIFT_TTL, ArcZonalShifts
from autoscaler.settings import Settings

ARN = "arn:aws:eks:us-west-2:123456789012:cluster/demo"
START = datetime(2026, 1, 1, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now


def _shift(zone: str, minutes: int, applied: str = "APPLIED", shift_type: str = "ZONAL_SHIFT") -> dict[str, Any]:
    return {
        "appliedStatus": applied,
        "zonalShiftId": f"shift-{zone}",
        "resourceIdentifier": ARN,
        "awayFrom": zone,
        "expiryTime": START + timedelta(minutes=minutes),
        "startTime": START,
        "comment": "test",
        "shiftType": shift_type,
    }


def _adapter(clock: Clock) -> tuple[ArcZonalShifts, Stubber]:
    clients = AWSClients("us-west-2")
    client = boto3.client("arc-zonal-shift", region_name="us-west-2", aws_access_key_id="x", aws_secret_access_key="x")
    clients.__dict__["arc_zonal_shift"] = client
    return ArcZonalShifts(clients, lambda: ARN, clock), Stubber(client)


def _answer(stub: Stubber, *shifts: dict[str, Any]) -> None:
    stub.add_response(
        "get_managed_resource", {"zonalShifts": list(shifts), "appliedWeights": {}}, {"resourceIdentifier": ARN}
    )


def test_applied_unexpired_shifts_and_autoshifts_count_and_others_do_not() -> None:
    clock = Clock()
    shifts, stub = _adapter(clock)
    _answer(
        stub,
        _shift("usw2-az1", 30),
        _shift("usw2-az2", 30, applied="NOT_APPLIED"),
        _shift("usw2-az3", 30, shift_type="ZONAL_AUTOSHIFT"),
    )
    with stub:
        assert shifts.shifted_away() == {"usw2-az1", "usw2-az3"}
        assert shifts.read_errors() == 0


def test_an_answer_is_kept_for_the_ttl_and_an_expiry_ends_a_shift_at_once() -> None:
    clock = Clock()
    shifts, stub = _adapter(clock)
    _answer(stub, _shift("usw2-az1", 60), _shift("usw2-az2", 0) | {"expiryTime": START + timedelta(seconds=10)})
    _answer(stub)  # cancelled: the next read finds none
    with stub:
        assert shifts.shifted_away() == {"usw2-az1", "usw2-az2"}
        clock.now += timedelta(seconds=15)  # within the TTL: no call, but az2's shift has expired
        assert shifts.shifted_away() == {"usw2-az1"}
        clock.now += ZONAL_SHIFT_TTL
        assert shifts.shifted_away() == frozenset()
        stub.assert_no_pending_responses()


def test_a_failed_read_is_counted_keeps_the_last_answer_and_is_retried_after_the_ttl() -> None:
    clock = Clock()
    shifts, stub = _adapter(clock)
    stub.add_client_error("get_managed_resource", "AccessDeniedException", http_status_code=403)
    _answer(stub, _shift("usw2-az1", 60))
    stub.add_client_error("get_managed_resource", "ThrottlingException", http_status_code=400)
    with stub:
        assert shifts.shifted_away() == frozenset()  # never read: no zone is shifted, as Karpenter answers
        assert shifts.shifted_away() == frozenset()  # not asked again within the TTL
        assert shifts.read_errors() == 1 and shifts.read_errors() == 0
        clock.now += ZONAL_SHIFT_TTL
        assert shifts.shifted_away() == {"usw2-az1"}
        clock.now += ZONAL_SHIFT_TTL
        assert shifts.shifted_away() == {"usw2-az1"}  # the read failed: the last answer stands
        assert shifts.read_errors() == 1
        stub.assert_no_pending_responses()


def test_a_reading_counts_the_failure_of_the_read_it_made() -> None:
    """The pass's reading asks the zones first: a failed refresh that asking makes is counted in the same reading."""
    clock = Clock()
    shifts, stub = _adapter(clock)
    _answer(stub, _shift("usw2-az1", 60))
    stub.add_client_error("get_managed_resource", "ThrottlingException", http_status_code=400)
    with stub:
        assert ShiftedZones.read(shifts) == ShiftedZones(frozenset({"usw2-az1"}), 0)
        clock.now += ZONAL_SHIFT_TTL
        assert ShiftedZones.read(shifts) == ShiftedZones(frozenset({"usw2-az1"}), 1)
        assert ShiftedZones.read(NoZonalShifts()) == ShiftedZones()
        stub.assert_no_pending_responses()


def test_the_setting_is_off_by_default_and_read_from_the_environment() -> None:
    assert Settings.from_env({"CLUSTER_NAME": "c"}).enable_zonal_shift is False
    assert Settings.from_env({"CLUSTER_NAME": "c", "ENABLE_ZONAL_SHIFT": "true"}).enable_zonal_shift is True
    assert NoZonalShifts().shifted_away() == frozenset() and NoZonalShifts().read_errors() == 0
