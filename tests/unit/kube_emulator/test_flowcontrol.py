"""Priority and fairness as the emulator applies it: a bucket per identity on the world's clock, admins exempt,
and latency that moves the virtual clock by overlapping, not adding up."""

from __future__ import annotations

from autoscaler_dev.kube_emulator.authentication import ADMIN, authenticated
from autoscaler_dev.kube_emulator.flowcontrol import FlowControl, FlowSettings


class Clock:
    def __init__(self) -> None:
        self.elapsed = 0.0

    def jump(self, to: float) -> None:
        self.elapsed = max(self.elapsed, to)


def test_an_identity_past_its_burst_is_told_to_retry_and_time_refills_it() -> None:
    clock = Clock()
    flow = FlowControl(FlowSettings(rate=10, burst=5, retry_after=2, latency=False), clock)
    busy, quiet = authenticated("busy"), authenticated("quiet")
    assert [flow.admit(busy) for _ in range(6)] == [None] * 5 + [2]
    assert flow.admit(quiet) is None  # buckets are per identity
    clock.jump(0.3)  # three requests' worth at 10/s
    assert [flow.admit(busy) for _ in range(4)] == [None, None, None, 2]
    assert flow.throttled == {"busy": 2}


def test_system_masters_are_exempt() -> None:
    flow = FlowControl(FlowSettings(rate=1, burst=1), Clock())
    assert all(flow.admit(ADMIN) is None for _ in range(50))


def test_latency_moves_the_clock_from_each_requests_start_so_concurrent_requests_overlap() -> None:
    clock = Clock()
    flow = FlowControl(FlowSettings(seed=3), clock)
    start = flow.started()
    latencies = [flow.finish("patch", start) for _ in range(8)]  # eight writes in flight together
    assert all(0.003 <= s <= 0.012 for s in latencies)
    assert clock.elapsed == max(latencies)
    listed = flow.finish("list", clock.elapsed)
    assert 0.010 <= listed <= 0.060


def test_latency_can_be_turned_off() -> None:
    clock = Clock()
    flow = FlowControl(FlowSettings(latency=False), clock)
    assert flow.finish("list", 0.0) == 0.0 and clock.elapsed == 0.0
