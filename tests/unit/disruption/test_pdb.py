"""PodDisruptionBudgets as disruption sees them: which pods may not be evicted now, and why."""

from __future__ import annotations

from typing import Any

import pytest

from autoscaler.controllers.disruption.pdb import DisruptionBudgets, scaled

WEB = {"app": "web"}


def pod(
    name: str,
    labels: dict[str, str] | None = None,
    *,
    namespace: str = "default",
    phase: str = "Running",
    ready: str = "True",
    deleting: bool = False,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "labels": dict(WEB if labels is None else labels)}
    if deleting:
        metadata["deletionTimestamp"] = "2026-01-05T09:00:00Z"
    if annotations:
        metadata["annotations"] = annotations
    return {
        "metadata": metadata,
        "spec": {"nodeName": "node-a"},
        "status": {"phase": phase, "conditions": [{"type": "Ready", "status": ready}]},
    }


def pdb(
    name: str = "web-pdb",
    *,
    namespace: str = "default",
    selector: dict[str, Any] | None = None,
    status: dict[str, Any] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"selector": {"matchLabels": WEB} if selector is None else selector, **spec},
    }
    if status is not None:
        body["status"] = status
    return body


def web(count: int, **fields: Any) -> list[dict[str, Any]]:
    return [pod(f"web-{i}", **fields) for i in range(count)]


BLOCKED = "PDB default/web-pdb prevents pod evictions"


class TestStatus:
    def test_status_allowance_is_trusted(self) -> None:
        pods = web(3)
        # The spec alone would allow two disruptions; the controller's status says none.
        budgets = DisruptionBudgets([pdb(minAvailable=1, status={"disruptionsAllowed": 0})], pods)
        assert budgets.blocking(pods[0]) == BLOCKED
        generous = pdb(minAvailable=3, status={"disruptionsAllowed": 1})
        assert DisruptionBudgets([generous], pods).blocking(pods[0]) is None

    def test_status_without_the_field_is_computed(self) -> None:
        pods = web(2)
        assert DisruptionBudgets([pdb(minAvailable=2, status={})], pods).blocking(pods[0]) == BLOCKED


class TestComputed:
    @pytest.mark.parametrize(
        ("spec", "healthy", "blocked"),
        [
            ({"minAvailable": 2}, 3, False),
            ({"minAvailable": 3}, 3, True),
            ({"minAvailable": "50%"}, 3, False),
            ({"minAvailable": "50%"}, 2, True),  # 50% of 3 rounds up to 2 desired
            ({"minAvailable": "100%"}, 3, True),
            ({"maxUnavailable": 1}, 3, False),
            ({"maxUnavailable": 0}, 3, True),
            ({"maxUnavailable": "0%"}, 3, True),
            ({"maxUnavailable": "34%"}, 2, False),  # 34% of 3 rounds up to 2 unavailable: desired 1
            ({"maxUnavailable": 1}, 2, True),  # one already unhealthy uses up the budget
            ({}, 0, False),  # neither field: nothing to protect
        ],
    )
    def test_allowance(self, spec: dict[str, Any], healthy: int, blocked: bool) -> None:
        pods = web(healthy) + [pod(f"sick-{i}", ready="False") for i in range(3 - healthy)]
        assert (DisruptionBudgets([pdb(**spec)], pods).blocking(pods[0]) == BLOCKED) is blocked

    def test_terminal_pods_are_not_expected_and_deleting_ones_not_healthy(self) -> None:
        done = pod("done", phase="Succeeded")
        going = pod("going", deleting=True)
        pods = [*web(2), done, going]
        # expected 3 (the deleting pod counts), healthy 2, desired 3 - 1 = 2: nothing to spare.
        assert DisruptionBudgets([pdb(maxUnavailable=1)], pods).blocking(pods[0]) == BLOCKED

    def test_pending_pods_are_not_healthy(self) -> None:
        pods = [*web(1), pod("pending", phase="Pending", ready="False")]
        assert DisruptionBudgets([pdb(minAvailable=1)], pods).blocking(pods[0]) == BLOCKED


class TestSelection:
    def test_other_namespaces_and_labels_are_not_held(self) -> None:
        elsewhere = pod("web-0", namespace="other")
        api = pod("api-0", {"app": "api"})
        budgets = DisruptionBudgets([pdb(maxUnavailable=0)], [*web(2), elsewhere, api])
        assert budgets.blocking(elsewhere) is None
        assert budgets.blocking(api) is None

    def test_match_expressions(self) -> None:
        selector = {
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["front", "edge"]},
                {"key": "canary", "operator": "DoesNotExist"},
                {"key": "zone", "operator": "NotIn", "values": ["b"]},
                {"key": "team", "operator": "Exists"},
            ],
        }
        budgets = DisruptionBudgets([pdb(selector=selector, maxUnavailable=0)], [])
        base = {"app": "web", "tier": "front", "team": "x"}
        assert budgets.blocking(pod("held", base)) == BLOCKED
        assert budgets.blocking(pod("canary", {**base, "canary": "1"})) is None
        assert budgets.blocking(pod("zone-b", {**base, "zone": "b"})) is None
        assert budgets.blocking(pod("no-team", {"app": "web", "tier": "front"})) is None

    def test_empty_selector_selects_all_and_null_none(self) -> None:
        api = pod("api-0", {"app": "api"})
        assert DisruptionBudgets([pdb(selector={}, maxUnavailable=0)], [api]).blocking(api) == BLOCKED
        null = pdb(maxUnavailable=0)
        null["spec"]["selector"] = None
        assert DisruptionBudgets([null], [api]).blocking(api) is None
        del null["spec"]["selector"]
        assert DisruptionBudgets([null], [api]).blocking(api) is None

    def test_more_than_one_pdb(self) -> None:
        pods = web(5)
        budgets = DisruptionBudgets([pdb("b", minAvailable=1), pdb("a", selector={})], pods)
        assert budgets.blocking(pods[0]) == "pod default/web-0 is selected by more than one PDB (default/a, default/b)"

    def test_invalid_selector_fails_closed(self) -> None:
        broken = pdb(selector={"matchExpressions": [{"key": "app", "operator": "Gt", "values": ["1"]}]})
        pods = web(1)
        assert DisruptionBudgets([broken], pods).blocking(pods[0]) == "PDB default/web-pdb has an invalid selector"


class TestExempt:
    @pytest.mark.parametrize(
        "exempt",
        [
            pod("done", phase="Succeeded"),
            pod("crashed", phase="Failed"),
            pod("going", deleting=True),
            pod("static", annotations={"kubernetes.io/config.mirror": "abc"}),
        ],
    )
    def test_pods_never_evicted_are_never_held(self, exempt: dict[str, Any]) -> None:
        assert DisruptionBudgets([pdb(maxUnavailable=0)], [exempt]).blocking(exempt) is None

    def test_always_allow_spares_unready_pods(self) -> None:
        sick = pod("sick", ready="False")
        policy = {"unhealthyPodEvictionPolicy": "AlwaysAllow"}
        assert DisruptionBudgets([pdb(maxUnavailable=0, **policy)], [sick]).blocking(sick) is None
        assert DisruptionBudgets([pdb(maxUnavailable=0)], [sick]).blocking(sick) == BLOCKED
        healthy = web(1)
        assert DisruptionBudgets([pdb(maxUnavailable=0, **policy)], healthy).blocking(healthy[0]) == BLOCKED


def test_blocking_any_reports_the_first_held_pod() -> None:
    api = pod("api-0", {"app": "api"})
    pods = [api, *web(2)]
    budgets = DisruptionBudgets([pdb(minAvailable=2)], pods)
    assert budgets.blocking_any(pods) == BLOCKED
    assert budgets.blocking_any([api]) is None
    assert budgets.blocking_any([]) is None


@pytest.mark.parametrize(("value", "total", "count"), [(3, 10, 3), ("3", 10, 3), ("25%", 10, 3), ("0%", 10, 0)])
def test_scaled(value: int | str, total: int, count: int) -> None:
    assert scaled(value, total) == count
