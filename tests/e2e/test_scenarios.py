"""Every scenario in ``events/scenarios`` run end to end in the embedded world (moto, the Kubernetes API emulator,
the real handlers on a virtual clock): each check its ``expect`` states must hold.

``scale-out`` (1,000 pods, ~65 s) runs at a fifth of its replicas here, so that all scenarios fit CI's budget
of about four minutes on two cores; its full size is for ``autoscaler simulate``. Its ``pods_total`` expectation
is scaled with it. ``diurnal`` (24 virtual hours) runs its first three hours here; bench/diurnal.py runs the day.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from moto.moto_api._internal.models import moto_api_backend

from autoscaler_dev.world.report import summary_table
from autoscaler_dev.world.runner import Simulation
from autoscaler_dev.world.scenario import Scenario

SCENARIOS = Path(__file__).resolve().parents[2] / "events" / "scenarios"
REDUCED = {"scale-out": 5}  # scenario -> divide its replicas by this
SLICED = {"diurnal": 3 * 3600.0}  # scenario -> the virtual seconds run here (the whole day: bench/diurnal.py)


@pytest.fixture(autouse=True)
def fresh_moto() -> Iterator[None]:
    """moto's backends are global to the process and outlive a world's server: each scenario starts empty."""
    yield
    moto_api_backend.reset()


def reduced(scenario: Scenario, factor: int) -> Scenario:
    """``scenario`` with every scale action's replicas and a numeric ``pods_total`` expectation divided by
    ``factor``."""
    actions = [
        a.model_copy(update={"args": {**a.args, "replicas": int(a.args["replicas"]) // factor}})
        if a.kind == "scale"
        else a
        for a in scenario.actions
    ]
    expect = dict(scenario.expect)
    if isinstance(expect.get("pods_total"), int | float):
        expect["pods_total"] = sum(int(a.args["replicas"]) for a in actions if a.kind == "scale")
    return scenario.model_copy(update={"actions": actions, "expect": expect})


@pytest.mark.parametrize("path", sorted(SCENARIOS.glob("*.yaml")), ids=lambda p: p.stem)
def test_scenario_meets_its_expectations(path: Path) -> None:
    scenario = Scenario.load(path)
    if scenario.name in REDUCED:
        scenario = reduced(scenario, REDUCED[scenario.name])
    if scenario.name in SLICED:
        scenario = scenario.first(SLICED[scenario.name])
    timeline = Simulation(scenario).run()
    assert timeline.checks, f"{path.name} expects nothing"
    failed = [name for name, met in timeline.checks.items() if not met]
    assert not failed, f"{path.name}: {failed}\n{summary_table(timeline)}"
