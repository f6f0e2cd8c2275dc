"""Every scenario in ``events/scenarios`` run end to end in the embedded world (moto, the Kubernetes API emulator,
the real handlers on a virtual clock): each check its ``expect`` states must hold.

``scale-out`` (1,000 pods, ~65 s) runs at a fifth of its replicas here, so that all scenarios fit CI's budget
of about four minutes on two cores; its full size is for ``autoscaler simulate``. Its ``pods_total`` expectation
is scaled with it (``conftest.reduced``). ``diurnal`` (24 virtual hours) runs its first three hours here;
bench/diurnal.py runs the day.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from autoscaler_dev.world.report import summary_table
from autoscaler_dev.world.timeline import Timeline
from tests.support.scenarios import SCENARIOS


@pytest.mark.parametrize("path", sorted(SCENARIOS.glob("*.yaml")), ids=lambda p: p.stem)
def test_scenario_meets_its_expectations(path: Path, scenario_run: Callable[[Path], Timeline]) -> None:
    timeline = scenario_run(path)
    assert timeline.checks, f"{path.name} expects nothing"
    failed = [name for name, met in timeline.checks.items() if not met]
    assert not failed, f"{path.name}: {failed}\n{summary_table(timeline)}"


def test_garbage_collection_s_removals_reach_the_decision_log(scenario_run: Callable[[Path], Timeline]) -> None:
    timeline = scenario_run(SCENARIOS / "leak.yaml")
    collected = [d for d in timeline.decisions if d.kind == "collected" and d.fields.get("resource") == "Instance"]
    assert len(collected) == timeline.summary["leaked_collected"] >= 1
    assert all(d.function == "garbage_collection" and d.fields.get("reason") for d in collected)
