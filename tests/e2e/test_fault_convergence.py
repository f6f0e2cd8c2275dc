"""Each of the faults that are periods of a run, injected for certain into a scenario: it is counted, and the system
converges anyway (the scenario's expectations met, every invariant at 0, nothing unscheduled, leaked or lost)."""

from __future__ import annotations

from typing import Any

from moto.moto_api._internal.models import moto_api_backend

from autoscaler_dev.world.faults import FaultRates
from autoscaler_dev.world.runner import Simulation
from autoscaler_dev.world.scenario import Scenario
from bench import reliability
from tests.support.scenarios import SCENARIOS


def converged(name: str, **rates: Any) -> dict[str, Any]:
    """The bench's row of scenario ``name`` run with ``rates``, after asserting it converged."""
    scenario = Scenario.load(SCENARIOS / f"{name}.yaml")
    scenario = scenario.model_copy(update={"faults": FaultRates(seed=1, **rates), "seed": 1})
    try:
        timeline = Simulation(scenario).run()
    finally:
        moto_api_backend.reset()
    row = reliability.row(name, 1, "test", timeline.summary, timeline.checks)
    assert {k: v for k, v in row["invariants"].items() if v} == {}, row["unmet"]
    assert (row["unscheduled"], row["leaked"], row["lost"]) == (0, 0, 0)
    return row


def test_the_api_server_gone_for_minutes_during_a_spot_storm() -> None:
    row = converged("spot-storm", kube_outage=1.0, kube_outage_minutes=3)
    assert row["faults"]["kube_outage"] == 1
    assert row["faults"]["kube_outage_refused"] > 0  # the functions did call it while it was down
