"""One run per scenario for the whole session: the scenario checks and the report checks read the same runs, so
that no scenario runs twice in CI's budget."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from moto.moto_api._internal.models import moto_api_backend

from autoscaler_dev.world.runner import Simulation
from autoscaler_dev.world.scenario import Scenario
from autoscaler_dev.world.timeline import Timeline
from tests.support.scenarios import REDUCED, SLICED, reduced


@pytest.fixture(scope="session")
def scenario_run() -> Iterator[Callable[[Path], Timeline]]:
    """The timeline of a scenario file's run (``scale-out`` at a fifth of its replicas, ``diurnal``
    its first three hours), run once per session."""
    runs: dict[Path, Timeline] = {}

    def run(path: Path) -> Timeline:
        if path not in runs:
            scenario = Scenario.load(path)
            if scenario.name in REDUCED:
                scenario = reduced(scenario, REDUCED[scenario.name])
            if scenario.name in SLICED:
                scenario = scenario.first(SLICED[scenario.name])
            try:
                runs[path] = Simulation(scenario).run()
            finally:
                moto_api_backend.reset()  # moto's backends outlive a world's server: each scenario starts empty
        return runs[path]

    yield run
