"""Leases taken by functions against the stack's limits: a pass never outlives its lease, and a lease left by a
pass that died expires before the next scheduled pass. No synth needed."""

from __future__ import annotations

from autoscaler.settings import GARBAGE_COLLECTION_LEASE_SECONDS
from infra.catalog import FUNCTIONS
from infra.config import DEFAULT_SCHEDULE_MINUTES


def test_the_garbage_collection_lease_outlives_a_pass_and_expires_before_the_next_one() -> None:
    timeout = FUNCTIONS["garbage_collection"].timeout_seconds
    period = DEFAULT_SCHEDULE_MINUTES["garbage_collection"] * 60
    assert timeout < GARBAGE_COLLECTION_LEASE_SECONDS < period
