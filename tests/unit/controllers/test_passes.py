"""The FIFO skip rule: which batches of provisioning triggers need no pass."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from autoscaler.controllers.batch_skip import CLOCK_SKEW, InMemoryLastPass, already_handled

PASS = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)


def test_a_batch_older_than_the_last_pass_is_handled() -> None:
    old = [PASS - timedelta(seconds=10), PASS - timedelta(seconds=3)]
    assert already_handled(old, PASS)


def test_one_newer_trigger_makes_a_pass() -> None:
    assert not already_handled([PASS - timedelta(seconds=10), PASS + timedelta(milliseconds=1)], PASS)


def test_triggers_within_the_clock_margin_make_a_pass() -> None:
    assert not already_handled([PASS - CLOCK_SKEW + timedelta(milliseconds=1)], PASS)
    assert not already_handled([PASS - CLOCK_SKEW], PASS)  # not strictly before by more than the margin


def test_no_pass_recorded_or_no_trigger_means_a_pass() -> None:
    assert not already_handled([PASS], None)
    assert not already_handled([], PASS)


def test_the_in_memory_store_never_goes_back() -> None:
    store = InMemoryLastPass()
    assert store.started_at() is None
    store.record(PASS)
    store.record(PASS - timedelta(seconds=1))
    assert store.started_at() == PASS
