"""One fault kind at a time on the leak scenario, shortened: an API server outage of minutes, paginated lists whose
continue tokens expire (``autoscaler_dev.world.kube_faults``), a new instance profile EC2 rejects for its first
seconds. The run must converge as without them: every invariant at 0, no function error outside the outage, the
leak collected, every pod running."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from moto.moto_api._internal.models import moto_api_backend

from autoscaler_dev.world.faults import FaultRates
from autoscaler_dev.world.runner import Simulation
from autoscaler_dev.world.scenario import Action, Scenario

LEAK = Path(__file__).resolve().parents[2] / "events" / "scenarios" / "leak.yaml"


def run(actions: list[dict[str, Any]], expect: dict[str, Any] | None = None, **rates: Any) -> dict[str, Any]:
    scenario = Scenario.load(LEAK)
    scenario = scenario.model_copy(
        update={
            "duration": 12 * 60.0,
            "expect": {**scenario.expect, **(expect or {})},
            "actions": [*scenario.actions, *(Action.parse(a) for a in actions)],
            "faults": FaultRates(seed=3, **rates),
        }
    )
    try:
        timeline = Simulation(scenario).run()
    finally:
        moto_api_backend.reset()
    assert all(timeline.checks.values()), timeline.checks
    return timeline.summary


def assert_converged(summary: dict[str, Any]) -> None:
    violated = {k: v for k, v in summary["invariants"].items() if v}
    assert not violated and summary["invariant_violations"] == 0
    assert summary["pods_running"] == summary["pods_total"]
    assert summary["leaked_at_end"] == 0


def test_an_api_server_outage_of_minutes_is_ridden_out() -> None:
    # The API server goes away while the leak awaits collection and new pods arrive.
    outage = {"at": "150s", "kube-outage": {"for": "3m"}}
    summary = run([outage, {"at": "3m", "scale": {"workload": "web", "replicas": 9}}], expect={"pods_total": 9})
    assert summary["faults_injected"]["kube_outage"] > 0
    assert_converged(summary)
    # Invocations fail while the API server is down (Lambda retries, the next sweep runs); none once it is back.
    assert summary["function_errors_in_kube_outage"] > 0 and summary["function_errors"] == 0


def test_expired_list_continuations_are_listed_again() -> None:
    summary = run([], kube_page=2, continue_expired=0.5)
    assert summary["faults_injected"]["continue_expired"] > 0
    assert_converged(summary)
    assert summary["function_errors"] == 0


def test_an_instance_profile_not_yet_visible_to_ec2_delays_the_launch_only() -> None:
    # The nodeclass function creates the profile at the start; the first launches meet IAM's propagation delay.
    summary = run([], profile_delay=60)
    assert summary["faults_injected"]["profile_not_ready"] > 0
    assert_converged(summary)
    assert summary["function_errors"] == 0


def test_a_throttled_and_failing_state_table_is_ridden_out() -> None:
    # Leases, unavailable offerings and last passes live in the table; botocore retries, the next pass recovers.
    summary = run([], table_errors=0.3)
    injected = summary["faults_injected"]
    assert injected["table_throttle"] > 0 and injected["table_unavailable"] > 0
    assert_converged(summary)


def test_a_batch_handled_twice_at_once_is_acted_on_once() -> None:
    # The visibility timeout expires while an invocation works: a second one gets the same messages meanwhile.
    # Every batch is handed over twice, those that bring the scale-out's pending pods too: one pass launches for
    # them (``launched_unused`` counts a second set of NodeClaims), the other finds the provisioner lease held.
    scale = {"at": "3m", "scale": {"workload": "web", "replicas": 40}}
    summary = run([scale], expect={"pods_total": 40}, visibility_expiry=1.0)
    assert summary["faults_injected"]["visibility_expiry"] > 0
    assert_converged(summary)
    assert summary["function_errors"] == 0


def test_cluster_events_delivered_late_and_out_of_order_still_converge() -> None:
    summary = run([{"at": "3m", "scale": {"workload": "web", "replicas": 9}}], expect={"pods_total": 9}, event_late=0.5)
    assert summary["faults_injected"]["event_late"] > 0
    assert_converged(summary)
    assert summary["function_errors"] == 0


def test_function_clocks_skewed_by_two_seconds_still_converge() -> None:
    summary = run([{"at": "3m", "scale": {"workload": "web", "replicas": 9}}], expect={"pods_total": 9}, clock_skew=2)
    assert summary["faults_injected"]["clock_skew"] >= 3  # every function that ran drew its own
    assert_converged(summary)
    assert summary["function_errors"] == 0
