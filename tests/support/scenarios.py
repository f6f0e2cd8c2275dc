"""The scenario files and how the end-to-end tests shrink the largest to fit CI's budget."""

from __future__ import annotations

from pathlib import Path

from autoscaler_dev.world.scenario import Scenario

SCENARIOS = Path(__file__).resolve().parents[2] / "events" / "scenarios"
REDUCED = {"scale-out": 5}  # scenario -> divide its replicas by this
SLICED = {"diurnal": 3 * 3600.0}  # scenario -> the virtual seconds run here (the whole day: bench/diurnal.py)


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
