"""Leases taken by functions against the stack's limits: a pass never outlives its lease, and a lease left by a
pass that died expires before the next scheduled pass. No synth needed."""

from __future__ import annotations

import pytest

from autoscaler.routing import DEFAULT_SCHEDULE_MINUTES
from autoscaler.settings import DISRUPTION_LEASE_SECONDS, GARBAGE_COLLECTION_LEASE_SECONDS
from infra.catalog import FUNCTIONS


@pytest.mark.parametrize(
    ("function", "lease_seconds"),
    [("garbage_collection", GARBAGE_COLLECTION_LEASE_SECONDS), ("disruption", DISRUPTION_LEASE_SECONDS)],
)
def test_a_lease_outlives_its_pass_and_expires_before_the_next_one(function: str, lease_seconds: int) -> None:
    timeout = FUNCTIONS[function].timeout_seconds
    period = DEFAULT_SCHEDULE_MINUTES[function] * 60
    assert timeout < lease_seconds < period
