"""The run report: text summary, timeline, and a self-contained HTML page whose SVG stays inside its viewBox."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from autoscaler_dev.world.report import html_report, summary_table, timeline_text, write_report
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


def test_summary_table_formats_values_and_checks(timeline: Timeline) -> None:
    text = summary_table(timeline)
    assert "81.2%" in text
    assert "1.23" in text and "1.23456" not in text
    assert "0.5000" in text
    assert "spot=4, on-demand=2" in text
    assert re.search(r"^pods_scheduled\s+40$", text, re.MULTILINE)
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
    assert page.count("<svg") == 3
    assert page.count("<polyline") == 8  # 2 pod series, 3 node series, cost plus two utilisations
    assert "81.2%" in page and "spot=4, on-demand=2" in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script" not in page
    assert "[FAILED] no orphaned instances" in page
    assert "62:03" in page
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")  # nothing external


def test_svg_coordinates_stay_inside_the_view_box(timeline: Timeline) -> None:
    for svg in re.findall(r"<svg.*?</svg>", html_report(timeline), re.DOTALL):
        width, height = map(float, re.search(r'viewBox="0 0 (\S+) (\S+)"', svg).groups())  # type: ignore[union-attr]
        for points in re.findall(r'points="([^"]+)"', svg):
            pairs = [tuple(map(float, p.split(","))) for p in points.split()]
            assert len(pairs) == 50
            assert all(0 <= x <= width and 0 <= y <= height for x, y in pairs)
        for name, value in re.findall(r'\b(x|y|x1|x2|y1|y2|cx|cy)="(-?[\d.]+)"', svg):
            limit = width if name.startswith("x") or name == "cx" else height
            assert 0 <= float(value) <= limit, (name, value)


@pytest.mark.parametrize("count", [0, 1])
def test_empty_and_single_sample_timelines_render(count: int) -> None:
    run = Timeline(scenario="empty", samples=[_sample(0)] * count)
    page = html_report(run)
    assert page.count("<svg") == 3
    assert ("no samples" in page) == (count == 0)
    assert page.count("<circle") == (8 if count else 0)
    assert summary_table(run).startswith("scenario: empty")
    assert timeline_text(run) == ""


def test_write_report_creates_directories(tmp_path: Path, timeline: Timeline) -> None:
    path = write_report(timeline, tmp_path / "a" / "b" / "report.html")
    assert path.read_text(encoding="utf-8") == html_report(timeline)


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
