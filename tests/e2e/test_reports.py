"""The spot-storm and AMI-rollout reports as a person sees them: rendered by headless Chromium from the files
``autoscaler simulate --report`` writes (offline), every chart drawn (the DOM after plotly ran, and a screenshot
of the nodes chart that is not blank), the decision log and each node's cordon, drain and termination present,
and nothing logged to the console as an error.

Chromium is Debian's ``chromium`` package (``.ci/run`` installs it); without it these tests skip and say so.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from autoscaler_dev.world.report import write_report
from autoscaler_dev.world.timeline import Timeline
from tests.support.browser import chromium, file_url, open_page, png_pixels
from tests.support.scenarios import SCENARIOS

BROWSER = chromium()
pytestmark = pytest.mark.skipif(
    BROWSER is None, reason="no Chromium here: `apt-get install chromium` (Debian) to render the reports"
)
CHARTS = ["pods", "nodes", "cost", "types", "zones", "pending", "node-timeline"]

RENDERED = """(() => {
  const charts = {};
  for (const plot of document.querySelectorAll('.js-plotly-plot')) {
    charts[plot.id] = plot.querySelectorAll('.main-svg').length
      && plot.querySelectorAll('.scatterlayer .trace, .barlayer .trace, .histogram .trace').length;
  }
  const rows = selector => Array.from(document.querySelectorAll(selector + ' tbody tr'))
    .map(tr => Array.from(tr.cells).map(td => td.textContent));
  return {
    charts,
    sections: Array.from(document.querySelectorAll('#decision-log > details > summary')).map(s => s.textContent),
    decisions: rows('#decision-log'),
    ended: rows('#nodes-ended'),
    header: Array.from(document.querySelectorAll('#nodes-ended thead th')).map(th => th.textContent),
  };
})()"""
BOX = """(() => {
  const box = document.querySelector('#nodes .main-svg').getBoundingClientRect();
  return {x: box.x + window.scrollX, y: box.y + window.scrollY, width: box.width, height: box.height};
})()"""


def _rendered(timeline: Timeline, directory: Path, expected: list[str] = CHARTS) -> dict[str, Any]:
    """What the page shows once Chromium ran its scripts; the page must log no error, every chart must be drawn,
    and the nodes chart's screenshot must not be blank (its stacked areas ink a share of it in several colours)."""
    page_path = write_report(timeline, directory / f"report-{timeline.scenario}.html")
    assert BROWSER is not None
    with open_page(file_url(page_path), BROWSER) as page:
        shown = page.evaluate(RENDERED)
        width, height, pixels = png_pixels(page.screenshot(page.evaluate(BOX)))
        assert page.errors == [], page.errors
    assert width > 300 and height > 200
    inked, colours = sum(1 for p in pixels if min(p[:3]) < 235) / len(pixels), len({p[:3] for p in pixels})
    assert inked > 0.02 and colours > 10, (inked, colours)
    charts = shown["charts"]
    assert list(charts) == expected and all(charts.values()), charts
    return shown


def test_the_capacity_buffer_report_draws_its_headroom_over_time(
    scenario_run: Callable[[Path], Timeline], tmp_path: Path
) -> None:
    timeline = scenario_run(SCENARIOS / "capacity-buffer.yaml")
    _rendered(timeline, tmp_path, [*CHARTS[:2], "headroom", *CHARTS[2:]])
    headroom = [s.headroom for s in timeline.samples if s.headroom is not None]
    # kept, eaten into by the burst, launched again: the chart has something to show
    assert headroom and min(headroom) < max(headroom) == timeline.summary["buffer_headroom_final"]


def _column(shown: dict[str, Any], name: str) -> list[str]:
    header = list(shown["header"])
    return [row[header.index(name)] for row in shown["ended"]]


def test_the_spot_storm_report_shows_cordons_replacements_and_latencies(
    scenario_run: Callable[[Path], Timeline], tmp_path: Path
) -> None:
    timeline = scenario_run(SCENARIOS / "spot-storm.yaml")
    shown = _rendered(timeline, tmp_path)
    sections = " ".join(shown["sections"])
    assert "Provisioning" in sections and "Interruption" in sections
    decisions = shown["decisions"]
    interrupted = timeline.summary["interrupted"]
    acted = [row for row in decisions if row[1] == "interruption (spot_interrupted)"]
    assert len(acted) >= interrupted and all("after the warning" in row[3] for row in acted)
    replacements = [row for row in decisions if row[1] == "provisioned" and row[0] >= "05:00"]  # the storm is at 05:00
    assert replacements and all("Launched" in row[3] for row in replacements)
    cordoned = [c for c in _column(shown, "cordoned") if c]
    terminated = [t for t in _column(shown, "terminated") if t]
    assert len(cordoned) >= interrupted and len(terminated) >= interrupted
    assert sum("interrupted (spot_interrupted)" in why for why in _column(shown, "why")) >= interrupted


def test_the_ami_rollout_report_shows_each_node_drifted_cordoned_drained_terminated(
    scenario_run: Callable[[Path], Timeline], tmp_path: Path
) -> None:
    timeline = scenario_run(SCENARIOS / "ami-rollout.yaml")
    shown = _rendered(timeline, tmp_path)
    drift = [row for row in shown["decisions"] if row[1] == "disrupting (drift)"]
    assert drift and all(row[3].startswith("Drifted: replace") for row in drift)
    replaced = timeline.summary["drifted_replaced"]
    for step in ("drifted", "disrupting", "cordoned", "drained", "terminated"):
        assert sum(1 for cell in _column(shown, step) if cell) >= replaced, step
    assert sum("Drifted: replace" in why for why in _column(shown, "why")) >= replaced
