"""Provisioning latency and Karpenter's batcher as the reference: pure, no network."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from autoscaler.controllers.state.inflight import NOMINATED_PODS
from autoscaler_dev.world.launch_latency import LaunchLatency, batcher_launches, nearest_rank

START = datetime(2026, 12, 3, tzinfo=UTC)


def stamp(seconds: float) -> str:
    return (START + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_a_lone_pod_waits_the_idle_second_then_the_pass() -> None:
    assert batcher_launches([5.0], pass_seconds=2.0) == [8.0]


def test_each_new_pod_restarts_the_idle_timer_until_the_window_is_ten_seconds_old() -> None:
    steady = [0.25 + 0.5 * i for i in range(40)]  # a pod every half second for 20 s
    launches = batcher_launches(steady, pass_seconds=0.0)
    assert launches[:20] == [10.25] * 20  # the first window closes 10 s after it opened, idle or not
    assert launches[20:] == [20.25] * 20  # the pod at its close opens the next one


def test_pods_arriving_during_a_pass_wait_for_the_next_batch() -> None:
    # the first batch closes at 1 s and its pass runs until 6 s; the pod at 3 s opens the next window at 6 s
    assert batcher_launches([0.0, 3.0], pass_seconds=5.0) == [6.0, 12.0]


def test_arrival_order_is_kept_in_the_answer() -> None:
    assert batcher_launches([30.0, 0.0], pass_seconds=1.0) == [32.0, 2.0]


def claim(name: str, created: float, pods: list[str], instance: str) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "creationTimestamp": stamp(created),
            "annotations": {NOMINATED_PODS: ",".join(pods)},
        },
        "status": {"providerID": f"aws:///us-west-2a/{instance}"},
    }


def pod(uid: str, created: float) -> dict[str, Any]:
    return {"metadata": {"name": uid, "uid": uid, "creationTimestamp": stamp(created)}}


def test_each_pod_is_measured_once_from_its_creation_to_its_claim_and_its_fleet_call() -> None:
    latency = LaunchLatency(lambda at: (at - START).total_seconds())
    latency.observe_pods([pod("a", 10), pod("b", 10), pod("c", 40), pod("on-a-node", 12)])
    latency.observe_claims([claim("first", 13, ["a", "b"], "i-1"), claim("again", 41, ["c", "a"], "i-2")])
    passes = [(12.5, 20.0), (40.2, 45.0)]  # the second claim's timestamp (41) is a truncated 41.x
    figures = latency.summary({"i-1": 15.0, "i-2": 42.0}, passes)
    assert figures["launch_latency_pods"] == 3  # "a" counted by its first NodeClaim; the pod on a node not at all
    assert figures["pending_to_nodeclaim_p50_s"] == 3.0 and figures["pending_to_nodeclaim_p99_s"] == 3.0
    assert (figures["pending_to_launch_p50_s"], figures["pending_to_launch_p99_s"]) == (5.0, 5.0)
    assert figures["pending_to_pass_p50_s"] == 2.5  # a, b: 12.5 - 10; c: 0.2
    assert figures["nodeclaim_to_launch_p50_s"] == 2.0
    # the reference: pass start -> CreateFleet is 2.5 (a, b) and 1.8 (c), median 2.5; batches close 1 s after
    assert figures["reference_pending_to_launch_p50_s"] == 3.5


def test_nothing_measured_gives_no_figures() -> None:
    figures = LaunchLatency(lambda at: 0.0).summary({}, [])
    assert figures["launch_latency_pods"] == 0 and figures["pending_to_launch_p99_s"] is None


@pytest.mark.parametrize(("share", "expected"), [(0.5, 2.0), (0.99, 4.0), (0.01, 1.0)])
def test_nearest_rank(share: float, expected: float) -> None:
    assert nearest_rank([4.0, 1.0, 3.0, 2.0], share) == expected
