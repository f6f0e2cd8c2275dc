"""``holding``, the one way a pass takes a lease: the block runs only for the holder, the lease is given up after it
(even when the block fails), a lease that cannot be read raises or lets the pass run as the caller chose, and a
release that fails never fails the pass."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest

from autoscaler.cloudprovider.errors import TransientCloudError
from autoscaler.cloudprovider.lease import InMemoryLeases, holding

TTL = timedelta(minutes=5)


class Unreachable(InMemoryLeases):
    """The state table failing: reads, writes or both."""

    def __init__(self, *, acquire: bool = True, release: bool = True) -> None:
        super().__init__()
        self.fail_acquire, self.fail_release = acquire, release

    def acquire(self, name: str, holder: str, ttl: timedelta) -> bool:
        if self.fail_acquire:
            raise TransientCloudError("the state table is throttling")
        return super().acquire(name, holder, ttl)

    def release(self, name: str, holder: str) -> None:
        if self.fail_release:
            raise TransientCloudError("the state table is unavailable")
        super().release(name, holder)


def test_the_holder_runs_another_holder_waits_and_the_lease_is_free_after_the_block() -> None:
    leases = InMemoryLeases()
    with holding(leases, "gc", "first", TTL) as held:
        assert held
        with holding(leases, "gc", "second", TTL) as other:
            assert not other
    assert leases.acquire("gc", "second", TTL)  # given up by the first


def test_a_failing_block_still_gives_the_lease_up() -> None:
    leases = InMemoryLeases()
    with pytest.raises(RuntimeError), holding(leases, "gc", "first", TTL):
        raise RuntimeError("the pass failed")
    assert leases.acquire("gc", "second", TTL)


def test_an_unknown_lease_raises_unless_the_caller_passes_anyway(caplog: pytest.LogCaptureFixture) -> None:
    with pytest.raises(TransientCloudError), holding(Unreachable(release=False), "gc", "first", TTL):
        pytest.fail("the block must not run")
    unknown = Unreachable()
    with caplog.at_level(logging.WARNING), holding(unknown, "provisioner", "a", TTL, pass_if_unknown=True) as held:
        assert held
    assert "the provisioner lease is unknown; passing anyway" in caplog.text
    assert "could not release the provisioner lease" in caplog.text


def test_a_release_that_fails_is_logged_and_the_block_s_result_stands(caplog: pytest.LogCaptureFixture) -> None:
    leases = Unreachable(acquire=False)

    def run() -> str:
        with holding(leases, "disruption", "a", TTL) as held:
            assert held
            return "passed"

    with caplog.at_level(logging.WARNING):
        assert run() == "passed"
    assert "could not release the disruption lease (it expires by itself)" in caplog.text


def test_without_leases_the_block_always_runs() -> None:
    with holding(None, "disruption", "local", TTL) as held:
        assert held
