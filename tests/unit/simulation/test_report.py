"""The run report: the grouped text summary, the timeline, and an HTML page of plotly charts that opens offline."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from autoscaler_dev.world.report import html_report, summary_table, timeline_text, write_report
from autoscaler_dev.world.report.page import PLOTLY_JS
from autoscaler_dev.world.timeline import Happening, Sample, Timeline


def _sample(i: int) -> Sample:
    spot, on_demand = i // 10, 1 + i // 25
    return Sample(
        t=i * 30.0,
        pods_total=40,
        pods_running=min(40, i),
        pods_pending=max(0, 40 - i),
        nodes=spot + on_demand,
        nodes_spot=spot,
        nodes_on_demand=on_demand,
        nodeclaims=spot + on_demand,
        cost_per_hour=0.0416 * on_demand + 0.0125 * spot,
        cpu_utilization=min(1.0, i / 50),
        memory_utilization=min(1.0, i / 80),
    )


@pytest.fixture
def timeline() -> Timeline:
    run = Timeline(scenario="spot-interruption & drift")
    run.samples = [_sample(i) for i in range(50)]
    run.happenings = [
        Happening(0.0, "launched", "nodeclaim/default-abc12", "m5.large on-demand"),
        Happening(125.4, "interrupted", "i-0123456789", "spot <script>alert(1)</script>"),
        Happening(3723.0, "dead-lettered", "message/42"),
    ]
    run.summary = {
        "pods_scheduled": 40,
        "mean_cpu_utilization": 0.8123,
        "cost_usd": 1.23456,
        "time_to_schedule_p95_s": 0.5,
        "launches_by_capacity": {"spot": 4, "on-demand": 2},
    }
    run.checks = {"all pods running": True, "no orphaned instances": False}
    return run


def test_summary_table_groups_keys_with_labels_units_and_checks(timeline: Timeline) -> None:
    text = summary_table(timeline)
    assert "81.2%" in text
    assert "$1.23/h" in text and "1.23456" not in text
    assert "0.5 s" in text
    assert "spot=4, on-demand=2" in text
    pods = text.split("\n\nPods\n", 1)[1].split("\n\n", 1)[0]
    assert re.search(r"^  Pods scheduled\s+40$", pods, re.MULTILINE)
    assert "[ok] all pods running" in text
    assert "[FAILED] no orphaned instances" in text


def test_timeline_text_limits_and_counts_the_rest(timeline: Timeline) -> None:
    lines = timeline_text(timeline, limit=2).splitlines()
    assert len(lines) == 3
    assert lines[0].startswith("00:00  launched   ")
    assert lines[1].startswith("02:05  interrupted")
    assert lines[2] == "... 1 more"
    assert timeline_text(timeline).splitlines()[2].startswith("62:03  dead-lettered")


def test_html_report_has_name_charts_summary_and_escapes(timeline: Timeline) -> None:
    page = html_report(timeline)
    assert page.startswith("<!DOCTYPE html>")
    assert "spot-interruption &amp; drift" in page
    charts = re.findall(r'<div class="chart" id="chart-([\w-]+)">', page)
    assert charts == ["pods", "nodes", "cost", "types", "zones", "pending"]  # no NodeClaims: no node timeline
    assert page.count("Plotly.newPlot(") == len(charts)
    assert "81.2%" in page and "spot=4, on-demand=2" in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script>alert" not in page
    assert "[FAILED] no orphaned instances" in page
    assert "62:03" in page
    sources = re.findall(r'(?:src|href)="([^"#]+)"', page)
    assert sources == [PLOTLY_JS]  # nothing external: plotly.js is a file beside the page


def test_the_nodes_chart_stacks_capacity_types_under_the_total(timeline: Timeline) -> None:
    page = html_report(timeline)
    nodes = page.split('id="chart-nodes"', 1)[1].split('<div class="chart"', 1)[0]
    figure = json.loads(re.search(r"Plotly.newPlot\(\s*\"nodes\",\s*(\[.*?\]),\s*\{", nodes, re.DOTALL).group(1))  # type: ignore[union-attr]
    by_name = {trace["name"]: trace for trace in figure}
    assert by_name["spot"].get("stackgroup") == by_name["on-demand"].get("stackgroup") == "c"
    assert "stackgroup" not in by_name["total"]
    assert len(by_name["total"]["y"]) == 50
    assert by_name["total"]["y"][-1] == timeline.samples[-1].nodes


@pytest.mark.parametrize("count", [0, 1])
def test_empty_and_single_sample_timelines_render(count: int) -> None:
    run = Timeline(scenario="empty", samples=[_sample(0)] * count)
    page = html_report(run)
    assert page.count("Plotly.newPlot(") == 6
    assert "No decisions were logged." in page and "No NodeClaims." in page
    assert summary_table(run).startswith("scenario: empty")
    assert timeline_text(run) == ""


def test_write_report_creates_directories_and_writes_plotly_beside_the_page(tmp_path: Path, timeline: Timeline) -> None:
    path = write_report(timeline, tmp_path / "a" / "b" / "report.html")
    assert path.read_text(encoding="utf-8") == html_report(timeline)
    script = path.parent / PLOTLY_JS
    assert script.stat().st_size > 1_000_000 and "plotly" in script.read_text(encoding="utf-8")[:2000].lower()


def test_a_burst_of_one_kind_of_happening_is_one_line() -> None:
    from autoscaler_dev.world.report import grouped
    from autoscaler_dev.world.timeline import Happening

    burst = [Happening(60.0 + i, "joined", f"node-{i}") for i in range(5)]
    lines = grouped([Happening(1.0, "scaled", "web", "to 5 replicas"), *burst, Happening(200.0, "joined", "late")])
    assert [(h.what, h.subject) for h in lines] == [
        ("scaled", "web"),
        ("joined x5", "node-0, node-1, node-2, ..."),
        ("joined", "late"),
    ]
