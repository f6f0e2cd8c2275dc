"""The provisioner lease: a batch handed over again while its pass still runs passes no second time (two passes
would schedule the same pending pods onto twice the NodeClaims), and a lease nobody can read stops nothing."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from autoscaler.cloudprovider.errors import TransientCloudError
from autoscaler.cloudprovider.lease import InMemoryLeases
from autoscaler.controllers.batch_skip import InMemoryLastPass, QueuedPasses, Trigger, lease_ttl
from autoscaler.metrics import PROVISIONER_SKIPPED_BATCHES
from autoscaler.settings import PROVISIONER_LEASE

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
TRIGGERS = [Trigger(NOW, "event-1")]


@dataclass
class Completed:
    started_at: datetime

    def summary(self) -> dict[str, Any]:
        return {"nodeclaims_created": 1}

    def metric_points(self) -> list[Any]:
        return []


@dataclass
class Reconciler:
    """A pass that, while it runs, lets ``during`` deliver the same batch to a second invocation."""

    during: Callable[[], None] | None = None
    failing: bool = False
    passes: int = 0

    def run(self, time_left: Callable[[], float] = lambda: 60.0, since: datetime | None = None) -> Completed:
        self.passes += 1
        if self.during is not None:
            during, self.during = self.during, None
            during()
        if self.failing:
            raise RuntimeError("the pass broke")
        return Completed(NOW)


@dataclass
class UnreadableLeases:
    calls: list[str] = field(default_factory=list)

    def acquire(self, name: str, holder: str, ttl: timedelta) -> bool:
        self.calls.append("acquire")
        raise TransientCloudError("ProvisionedThroughputExceededException")

    def release(self, name: str, holder: str) -> None:
        self.calls.append("release")
        raise TransientCloudError("ProvisionedThroughputExceededException")


def test_the_same_batch_handed_over_during_its_pass_passes_once() -> None:
    reconciler, leases = Reconciler(), InMemoryLeases(lambda: NOW)
    passes = QueuedPasses(reconciler, InMemoryLastPass(), leases)
    second: list[Any] = []
    reconciler.during = lambda: second.append(passes.run(TRIGGERS, "invocation-2", lambda: 120.0))
    first = passes.run(TRIGGERS, "invocation-1", lambda: 120.0)
    assert reconciler.passes == 1
    assert first.summary == {"nodeclaims_created": 1}
    assert second[0].summary == {"skipped": "another invocation's pass is running"}
    assert [p.value for p in second[0].points if p.name == PROVISIONER_SKIPPED_BATCHES] == [1]
    # released when the pass ends: the next batch (newer triggers) passes at once
    later = [Trigger(NOW + timedelta(seconds=30), "event-2")]
    assert passes.run(later, "invocation-3", lambda: 120.0).summary == {"nodeclaims_created": 1}
    assert reconciler.passes == 2


def test_a_failed_pass_gives_the_lease_up_too() -> None:
    reconciler, leases = Reconciler(failing=True), InMemoryLeases(lambda: NOW)
    passes = QueuedPasses(reconciler, InMemoryLastPass(), leases)
    assert passes.run(TRIGGERS, "invocation-1").summary == {"failed": True}
    assert leases.acquire(PROVISIONER_LEASE, "someone-else", timedelta(seconds=10))


def test_a_lease_held_by_an_invocation_that_died_lapses_when_it_could_have_ended() -> None:
    clock = [NOW]
    leases = InMemoryLeases(lambda: clock[0])
    assert leases.acquire(PROVISIONER_LEASE, "died", lease_ttl(120.0))
    passes = QueuedPasses(Reconciler(), InMemoryLastPass(), leases)
    assert "skipped" in passes.run(TRIGGERS, "redelivered", lambda: 120.0).summary
    clock[0] = NOW + timedelta(seconds=123)  # past its 120 s and the clocks' margin
    assert passes.run(TRIGGERS, "redelivered", lambda: 120.0).summary == {"nodeclaims_created": 1}


def test_a_lease_that_cannot_be_read_or_given_up_does_not_stop_provisioning() -> None:
    reconciler, leases = Reconciler(), UnreadableLeases()
    outcome = QueuedPasses(reconciler, InMemoryLastPass(), leases).run(TRIGGERS, "invocation-1")
    assert outcome.summary == {"nodeclaims_created": 1}
    assert leases.calls == ["acquire", "release"]


@pytest.mark.parametrize(("left", "held"), [(120.0, 122.0), (float("inf"), 902.0)])
def test_the_lease_lasts_as_long_as_the_invocation_can(left: float, held: float) -> None:
    assert lease_ttl(left).total_seconds() == held
