"""A scenario action the world cannot apply when it is due (faults left fewer Ready nodes than it asks for, say)
fails the run's checks and leaves a line in the timeline, without ending the run; an action with arguments its
kind does not take is the file's error and ends it."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from autoscaler_dev.world.actions import ScenarioActions
from autoscaler_dev.world.scenario import Action, ScenarioError
from autoscaler_dev.world.timeline import Timeline


def actions(*raw: dict[str, Any]) -> tuple[ScenarioActions, Timeline]:
    timeline = Timeline("actions")
    sim: Any = SimpleNamespace(timeline=timeline, actors=SimpleNamespace(workloads={}))
    return ScenarioActions(sim, [Action.parse(r) for r in raw]), timeline


def test_an_action_the_world_cannot_apply_fails_the_checks_and_the_run_goes_on() -> None:
    scenario, timeline = actions({"at": 10, "scale": {"workload": "web", "replicas": 3}})
    scenario.apply_due(10)
    assert scenario.checks() == {"applied scale at 10s: scale: no workload named 'web'": False}
    assert [(h.what, h.subject) for h in timeline.happenings] == [("action-failed", "scale")]
    assert scenario.next_at() is None  # not retried


def test_an_action_with_arguments_its_kind_does_not_take_ends_the_run() -> None:
    scenario, _ = actions({"at": 5, "scale": {"workload": "web", "replicas": 3, "surge": 1}})
    with pytest.raises(ScenarioError, match="action scale at 5s"):
        scenario.apply_due(5)
