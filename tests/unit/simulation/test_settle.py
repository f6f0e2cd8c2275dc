"""A run past its duration: it goes on while a pod is still pending, for at most the scenario's ``settle``, and ends
at its duration when nothing is pending or no settle is given."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from autoscaler_dev.world.runner import Simulation
from autoscaler_dev.world.scenario import Scenario


def world(elapsed: float, pods: list[dict[str, Any]]) -> Any:
    return SimpleNamespace(clock=SimpleNamespace(elapsed=elapsed), kube=SimpleNamespace(list=lambda api, kind: pods))


PENDING = {"metadata": {"name": "web-1"}, "spec": {}}
RUNNING = {"metadata": {"name": "web-2"}, "spec": {"nodeName": "node-a"}}
DELETING = {"metadata": {"name": "web-3", "deletionTimestamp": "2026-12-04T00:00:00Z"}, "spec": {}}


@pytest.mark.parametrize(
    ("settle", "elapsed", "pods", "goes_on"),
    [
        ("20m", 700, [PENDING, RUNNING], True),
        ("20m", 600 + 1200, [PENDING], True),
        ("20m", 600 + 1201, [PENDING], False),  # the settle is over: the pod counts as unscheduled
        ("20m", 700, [RUNNING, DELETING], False),  # nothing waits for a node
        ("0s", 700, [PENDING], False),
    ],
)
def test_a_run_settles_while_a_pod_is_pending(
    tmp_path: Path, settle: str, elapsed: float, pods: list[dict[str, Any]], goes_on: bool
) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(f"name: s\nduration: 10m\nsettle: {settle}\n")
    simulation = Simulation(Scenario.load(path))
    assert simulation._settling(world(elapsed, pods)) is goes_on
