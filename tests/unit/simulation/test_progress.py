"""Progress a person can follow: one plain line per scenario per simulated minute when the output is not a
terminal, one live line per scenario with the happenings above them when it is."""

from __future__ import annotations

import io

from rich.console import Console

from autoscaler_dev.world.progress import LineProgress, LiveProgress, Progress, display
from autoscaler_dev.world.timeline import Happening


def _progress(scenario: str, t: float, **changes: object) -> Progress:
    fields: dict[str, object] = {
        "scenario": scenario,
        "t": t,
        "duration": 900.0,
        "pods_running": 10,
        "pods_total": 12,
        "pods_pending": 2,
        "nodes": 3,
        "nodes_spot": 1,
        "cost_per_hour": 0.4567,
        **changes,
    }
    return Progress(**fields)  # type: ignore[arg-type]


def test_without_a_terminal_each_scenario_prints_one_line_per_simulated_minute() -> None:
    out = io.StringIO()
    lines = LineProgress(out)
    for t in (0.0, 30.0, 60.0, 90.0, 125.0):  # samples every 30 virtual seconds
        lines.update(_progress("storm", t))
        lines.update(_progress("rollout", t))
    lines.update(_progress("storm", 130.0, done=True))
    printed = out.getvalue().splitlines()
    assert [line.split()[0] for line in printed] == ["storm", "rollout"] * 3 + ["storm"]
    assert printed[0] == "storm  00:00 / 15:00  pods 10/12 running (2 pending)  nodes 3 (1 spot)  $0.46/h"
    assert printed[2].startswith("storm  01:00 / 15:00")
    assert printed[-1].startswith("storm           done")


def test_on_a_terminal_one_live_line_per_scenario_and_the_happenings_above() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=140, color_system=None)
    with LiveProgress(console, ["storm", "rollout"]) as live:
        burst = tuple(Happening(300.0 + i, "interrupted", f"i-{i}") for i in range(7))
        live.update(_progress("storm", 310.0, happenings=burst))
        live.update(_progress("rollout", 60.0))
    text = out.getvalue()
    assert "storm  05:00  interrupted x7  i-0, i-1, i-2, ..." in text
    final = text.rsplit("interrupted x7", 1)[1]
    assert "storm    05:10 / 15:00  pods 10/12" in final and "rollout  01:00 / 15:00" in final


def test_the_display_follows_the_stream() -> None:
    assert isinstance(display(io.StringIO(), ["a"]), LineProgress)
