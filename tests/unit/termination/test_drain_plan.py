"""The pure drain planner: which pods leave now, in which order, and when the deadline overrides PDBs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.conditions import timestamp
from autoscaler.controllers.termination import DrainGroup, PodDeletion, PodRef, plan_drain
from autoscaler.controllers.termination.drain import deletion_time
from autoscaler.controllers.termination.pods import (
    drain_group,
    is_drainable,
    is_evictable,
    tolerates_disrupted_taint,
)
from tests.unit.termination.builders import pod

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
DO_NOT_DISRUPT = {wk.ANNOTATION_DO_NOT_DISRUPT: "true"}


def ref(name: str) -> PodRef:
    return PodRef("default", name, f"uid-{name}")


def names(refs: tuple[PodRef, ...]) -> set[str]:
    return {r.name for r in refs}


def test_pods_leave_in_karpenters_order_one_group_at_a_time() -> None:
    pods = [
        pod("critical-daemon", daemon=True, critical=True),
        pod("critical", critical=True),
        pod("daemon", daemon=True),
        pod("web-1"),
        pod("web-2"),
    ]
    plan = plan_drain(pods, NOW)
    assert (plan.group, names(plan.evict)) == (DrainGroup.NON_CRITICAL, {"web-1", "web-2"})
    assert len(plan.waiting) == 5 and not plan.drained and plan.delete == ()

    expected = [
        ({"web-1", "web-2"}, DrainGroup.NON_CRITICAL_DAEMON, {"daemon"}),
        ({"daemon"}, DrainGroup.CRITICAL, {"critical"}),
        ({"critical"}, DrainGroup.CRITICAL_DAEMON, {"critical-daemon"}),
    ]
    for gone, group, evicted in expected:
        pods = [p for p in pods if p["metadata"]["name"] not in gone]
        plan = plan_drain(pods, NOW)
        assert (plan.group, names(plan.evict)) == (group, evicted)
    assert plan_drain([], NOW).drained


def test_a_later_group_waits_while_an_earlier_one_is_still_terminating() -> None:
    evicting = pod("web-1", deletion=timestamp(NOW + timedelta(seconds=20)))
    plan = plan_drain([evicting, pod("daemon", daemon=True)], NOW)
    assert plan.group is DrainGroup.NON_CRITICAL
    assert plan.evict == ()  # the terminating pod is not evicted twice, and the daemon waits for it
    assert names(plan.waiting) == {"web-1", "daemon"}


def test_a_later_group_waits_for_do_not_disrupt_pods_of_an_earlier_one() -> None:
    plan = plan_drain([pod("batch", annotations=DO_NOT_DISRUPT), pod("logs", daemon=True)], NOW)
    assert plan.group is DrainGroup.NON_CRITICAL and plan.evict == ()
    assert names(plan.waiting) == {"batch", "logs"}


@pytest.mark.parametrize(
    "toleration",
    [
        {"operator": "Exists"},
        {"key": wk.TAINT_DISRUPTED, "operator": "Exists"},
        {"key": wk.TAINT_DISRUPTED, "operator": "Exists", "effect": "NoSchedule"},
        {"key": wk.TAINT_DISRUPTED, "value": "", "effect": "NoSchedule"},
        {"operator": "Exists", "effect": "NoSchedule"},
    ],
)
def test_pods_tolerating_the_disrupted_taint_are_left_alone(toleration: dict[str, str]) -> None:
    tolerant = pod("tolerant", tolerations=[toleration])
    assert tolerates_disrupted_taint(tolerant)
    plan = plan_drain([tolerant], NOW, NOW)
    assert plan.drained and plan.evict == () and plan.delete == ()


@pytest.mark.parametrize(
    "toleration",
    [
        {"key": wk.TAINT_DISRUPTED, "operator": "Exists", "effect": "NoExecute"},
        {"key": "other", "operator": "Exists"},
        {"key": wk.TAINT_DISRUPTED, "value": "true"},
    ],
)
def test_tolerations_of_other_taints_do_not_exempt_a_pod(toleration: dict[str, str]) -> None:
    assert not tolerates_disrupted_taint(pod("p", tolerations=[toleration]))
    assert names(plan_drain([pod("p", tolerations=[toleration])], NOW).evict) == {"p"}


def test_static_terminal_and_stuck_pods_are_not_waited_for() -> None:
    mirror = pod("kube-proxy")
    mirror["metadata"]["annotations"]["kubernetes.io/config.mirror"] = "hash"
    pods = [
        pod("etcd", static=True),
        mirror,
        pod("job", phase="Succeeded"),
        pod("failed", phase="Failed"),
        pod("stuck", deletion=timestamp(NOW - timedelta(minutes=1, seconds=1))),
    ]
    plan = plan_drain(pods, NOW)
    assert plan.drained and plan.evict == ()
    # A pod terminating for less than a minute past its grace period is still waited for.
    assert not plan_drain([pod("slow", deletion=timestamp(NOW - timedelta(seconds=59)))], NOW).drained


def test_do_not_disrupt_pods_are_waited_for_but_never_evicted() -> None:
    guarded = pod("batch", annotations=DO_NOT_DISRUPT)
    assert is_drainable(guarded, NOW) and not is_evictable(guarded)
    plan = plan_drain([guarded, pod("web")], NOW)
    assert names(plan.evict) == {"web"} and names(plan.waiting) == {"batch", "web"}
    assert is_evictable(pod("x", annotations={wk.ANNOTATION_DO_NOT_DISRUPT: "false"}))  # only "true" guards


def test_without_a_deadline_nothing_is_ever_deleted() -> None:
    plan = plan_drain([pod("batch", annotations=DO_NOT_DISRUPT)], NOW + timedelta(days=365))
    assert plan.delete == () and not plan.drained


def test_each_pod_is_deleted_at_the_deadline_minus_its_own_grace_period() -> None:
    deadline = NOW + timedelta(minutes=10)
    short = pod("short", grace=30, annotations=DO_NOT_DISRUPT)
    long = pod("long", grace=300, annotations=DO_NOT_DISRUPT)
    assert deletion_time(short, deadline) == deadline - timedelta(seconds=30)

    assert plan_drain([short, long], deadline - timedelta(seconds=301), deadline).delete == ()
    at_long = plan_drain([short, long], deadline - timedelta(seconds=300), deadline)
    assert at_long.delete == (PodDeletion(ref("long"), 300),)
    at_short = plan_drain([short, long], deadline - timedelta(seconds=30), deadline)
    assert set(at_short.delete) == {PodDeletion(ref("long"), 30), PodDeletion(ref("short"), 30)}


def test_deadline_deletions_bypass_group_order_and_clamp_the_grace_period() -> None:
    deadline = NOW
    pods = [pod("web", grace=3600), pod("logs", daemon=True, grace=0), pod("dns", critical=True, grace=None)]
    plan = plan_drain(pods, NOW + timedelta(seconds=5), deadline)
    # Past the deadline every waiting pod is deleted at once, with the 1 s minimum (never a force delete).
    assert {(d.pod.name, d.grace_period_seconds) for d in plan.delete} == {("web", 1), ("logs", 1), ("dns", 1)}
    assert plan.evict == ()  # a pod being deleted is not also evicted
    before = plan_drain(pods, NOW - timedelta(seconds=10), deadline)
    # The pod without terminationGracePeriodSeconds gets Kubernetes' default of 30 s, clamped to the time left.
    assert {(d.pod.name, d.grace_period_seconds) for d in before.delete} == {("web", 10), ("dns", 10)}


def test_terminating_pods_are_not_deleted_again_at_the_deadline() -> None:
    evicting = pod("web", deletion=timestamp(NOW + timedelta(seconds=10)))
    plan = plan_drain([evicting], NOW, NOW)
    assert plan.delete == () and names(plan.waiting) == {"web"}


# --- properties over arbitrary pods -------------------------------------------------------------------------
_TOLERATIONS = st.sampled_from([[], [{"operator": "Exists"}], [{"key": "other", "operator": "Exists"}]])


@st.composite
def pods_on_a_node(draw: st.DrawFn) -> list[dict[str, Any]]:
    result = []
    for index in range(draw(st.integers(0, 8))):
        deletion = draw(st.sampled_from([None, NOW - timedelta(minutes=5), NOW + timedelta(seconds=30)]))
        result.append(
            pod(
                f"p{index}",
                daemon=draw(st.booleans()),
                critical=draw(st.booleans()),
                static=draw(st.booleans()),
                grace=draw(st.sampled_from([None, 0, 30, 600])),
                tolerations=draw(_TOLERATIONS),
                annotations=DO_NOT_DISRUPT if draw(st.booleans()) else None,
                phase=draw(st.sampled_from(["Running", "Running", "Pending", "Succeeded"])),
                deletion=timestamp(deletion) if deletion else None,
            )
        )
    return result


@settings(max_examples=300, deadline=None)
@given(pods_on_a_node(), st.sampled_from([None, NOW - timedelta(hours=1), NOW + timedelta(seconds=45)]))
def test_plans_never_break_the_drain_rules(pods: list[dict[str, Any]], deadline: datetime | None) -> None:
    plan = plan_drain(pods, NOW, deadline)
    by_name = {p["metadata"]["name"]: p for p in pods}
    waiting = [by_name[r.name] for r in plan.waiting]
    for evicted in plan.evict:
        chosen = by_name[evicted.name]
        assert is_evictable(chosen)  # never do-not-disrupt, tolerating, static, terminating or finished
        assert all(drain_group(chosen) <= drain_group(w) for w in waiting)  # no group jumps the queue
    for deletion in plan.delete:
        chosen = by_name[deletion.pod.name]
        assert deadline is not None and deletion_time(chosen, deadline) <= NOW
        assert deletion.grace_period_seconds >= 1
    assert not {r.name for r in plan.evict} & {d.pod.name for d in plan.delete}
    assert plan.drained == (not any(is_drainable(p, NOW) and p["status"]["phase"] != "Succeeded" for p in pods))
