"""Render a simulated run's ``Timeline`` as plain text and as one self-contained HTML page.

Standard library only: the package ships as a Lambda layer, so charts are hand-drawn inline SVG rather than
pulled from a plotting library, and the page carries no external resources so it can be opened anywhere.
"""

from __future__ import annotations

import html
import math
import pathlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from autoscaler.crds.columns import format_table
from autoscaler_dev.world.timeline import Happening, Timeline

_WIDTH, _HEIGHT = 760, 280
_LEFT, _RIGHT, _TOP, _BOTTOM = 64, 56, 44, 40
_PLOT_W, _PLOT_H = _WIDTH - _LEFT - _RIGHT, _HEIGHT - _TOP - _BOTTOM


def _number(value: float) -> str:
    """Floats with 2 decimals when large, 4 when small, so cents and fractions both stay readable."""
    if math.isnan(value) or math.isinf(value):
        return str(value)
    return f"{value:.2f}" if abs(value) >= 1 or value == 0 else f"{value:.4f}"


def _value(key: str, value: Any) -> str:
    """One summary value as text; utilisations are fractions 0..1 (see ``Sample``), shown as percentages."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if key.endswith("_utilization") and isinstance(value, int | float):
        return f"{value * 100:.1f}%"
    if isinstance(value, float):
        return _number(value)
    if isinstance(value, dict):
        return ", ".join(f"{k}={_value(str(k), v)}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return ", ".join(_value(key, v) for v in value)
    return str(value)


def _clock(t: float) -> str:
    """Virtual seconds as mm:ss; minutes keep counting past 59 because runs are short and hours would be noise."""
    seconds = max(0, int(t))
    return f"{seconds // 60:02d}:{seconds % 60:02d}"


def _check_lines(timeline: Timeline) -> list[str]:
    return [f"[{'ok' if met else 'FAILED'}] {name}" for name, met in timeline.checks.items()]


def summary_table(timeline: Timeline) -> str:
    """The summary as a KEY/VALUE table followed by one ``[ok]``/``[FAILED]`` line per check."""
    rows = [[str(key), _value(str(key), value)] for key, value in timeline.summary.items()]
    parts = [f"scenario: {timeline.scenario}", format_table(["KEY", "VALUE"], rows)]
    checks = _check_lines(timeline)
    if checks:
        parts.append("\n".join(checks))
    return "\n\n".join(parts)


def grouped(happenings: list[Happening], bucket: float = 60.0) -> list[Happening]:
    """Runs of the same kind of happening within one ``bucket`` of virtual time, as one line each ("joined x148"):
    a burst of 150 nodes joining is one fact, not 150 lines."""
    lines: list[Happening] = []
    run: list[Happening] = []
    for happening in [*happenings, None]:
        if run and (happening is None or happening.what != run[0].what or happening.t - run[0].t >= bucket):
            first = run[0]
            if len(run) == 1:
                lines.append(first)
            else:
                names = ", ".join(h.subject for h in run[:3]) + (", ..." if len(run) > 3 else "")
                lines.append(Happening(first.t, f"{first.what} x{len(run)}", names, first.text if len(run) < 4 else ""))
            run = []
        if happening is not None:
            run.append(happening)
    return lines


def timeline_text(timeline: Timeline, limit: int = 40) -> str:
    """The first ``limit`` lines of the grouped timeline, aligned, then how many were left out."""
    lines_in = grouped(timeline.happenings)
    shown = lines_in[: max(0, limit)]
    what_w = max((len(h.what) for h in shown), default=0)
    subject_w = max((len(h.subject) for h in shown), default=0)
    lines = [f"{_clock(h.t)}  {h.what.ljust(what_w)}  {h.subject.ljust(subject_w)}  {h.text}".rstrip() for h in shown]
    rest = len(lines_in) - len(shown)
    if rest > 0:
        lines.append(f"... {rest} more")
    return "\n".join(lines)


@dataclass(frozen=True)
class _Series:
    label: str
    color: str
    values: list[float]
    right: bool = False  # drawn dashed against the right-hand 0..100% scale


def _step(span: float, target: int) -> float:
    """A 1-2-5 tick step giving about ``target`` intervals over ``span`` (which must be positive)."""
    raw = span / target
    magnitude = 10.0 ** math.floor(math.log10(raw))
    return next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw * (1 - 1e-9))


def _tick(value: float) -> str:
    return f"{round(value, 6):g}"


def _y_scale(series: Sequence[_Series]) -> tuple[float, float]:
    """(top, step) of a left axis starting at zero; at least 1 so flat or empty series never divide by zero."""
    peak = max((v for s in series for v in s.values if math.isfinite(v)), default=0.0)
    peak = max(peak, 1e-9)
    step = _step(peak, 4)
    if all(float(v).is_integer() for s in series for v in s.values):
        step = max(step, 1.0)  # counts: no half-pods on the axis
    return max(step * math.ceil(peak / step - 1e-9), step), step


def _chart(
    title: str, minutes: list[float], series: Sequence[_Series], left_label: Callable[[float], str] = _tick
) -> str:
    """One line chart as inline SVG; the x axis is virtual minutes, right-hand series use a fixed 0..100% scale."""
    x0, x1 = (minutes[0], minutes[-1]) if minutes else (0.0, 1.0)
    if x1 <= x0:
        x1 = x0 + 1.0
    top, step = _y_scale([s for s in series if not s.right])

    def x_px(t: float) -> float:
        return _LEFT + (t - x0) / (x1 - x0) * _PLOT_W

    def y_px(value: float, scale: float) -> float:
        fraction = min(max(value / scale, 0.0), 1.0) if math.isfinite(value) else 0.0
        return _TOP + _PLOT_H - fraction * _PLOT_H

    bottom = _TOP + _PLOT_H
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_WIDTH} {_HEIGHT}" width="{_WIDTH}" '
        f'height="{_HEIGHT}" role="img" aria-label="{html.escape(title)}">',
        f'<text x="{_LEFT}" y="18" class="title">{html.escape(title)}</text>',
        f'<rect x="{_LEFT}" y="{_TOP}" width="{_PLOT_W}" height="{_PLOT_H}" class="plot"/>',
    ]
    count = round(top / step)
    for i in range(count + 1):
        y = y_px(i * step, top)
        out.append(f'<line x1="{_LEFT}" y1="{y:.1f}" x2="{_LEFT + _PLOT_W}" y2="{y:.1f}" class="grid"/>')
        label = html.escape(left_label(i * step))
        out.append(f'<text x="{_LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{label}</text>')
    if any(s.right for s in series):
        for percent in (0, 25, 50, 75, 100):
            y = y_px(percent, 100)
            out.append(f'<text x="{_LEFT + _PLOT_W + 6}" y="{y + 4:.1f}">{percent}%</text>')
    x_step = _step(x1 - x0, 6)
    tick = math.ceil(x0 / x_step - 1e-9) * x_step
    while tick <= x1 + 1e-9:
        x = x_px(tick)
        out.append(f'<line x1="{x:.1f}" y1="{bottom}" x2="{x:.1f}" y2="{bottom + 4}" class="axis"/>')
        out.append(f'<text x="{x:.1f}" y="{bottom + 17}" text-anchor="middle">{_tick(tick)}</text>')
        tick += x_step
    out.append(f'<text x="{_LEFT + _PLOT_W / 2}" y="{_HEIGHT - 4}" text-anchor="middle">minutes</text>')
    if not minutes:
        out.append(f'<text x="{_LEFT + _PLOT_W / 2}" y="{_TOP + _PLOT_H / 2}" text-anchor="middle">no samples</text>')
    legend_x = _LEFT + _PLOT_W
    for s in reversed(series):
        legend_x -= 14 + 7 * len(s.label) + 18
        dash = ' stroke-dasharray="5 3"' if s.right else ""
        out.append(
            f'<line x1="{legend_x}" y1="30" x2="{legend_x + 14}" y2="30" stroke="{s.color}" stroke-width="2"{dash}/>'
        )
        out.append(f'<text x="{legend_x + 18}" y="34">{html.escape(s.label)}</text>')
    for s in series:
        scale = 100.0 if s.right else top
        points = [(x_px(t), y_px(v, scale)) for t, v in zip(minutes, s.values, strict=True)]
        dash = ' stroke-dasharray="5 3"' if s.right else ""
        if len(points) == 1:
            (x, y) = points[0]
            out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{s.color}"/>')
        elif points:
            text = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
            out.append(
                f'<polyline points="{text}" fill="none" stroke="{s.color}" stroke-width="2"{dash}>'
                f"<title>{html.escape(s.label)}</title></polyline>"
            )
    out.append("</svg>")
    return "\n".join(out)


def _charts(timeline: Timeline) -> list[str]:
    samples = timeline.samples
    minutes = [s.t / 60 for s in samples]
    pods = [
        _Series("pending", "#d62728", [float(s.pods_pending) for s in samples]),
        _Series("running", "#2ca02c", [float(s.pods_running) for s in samples]),
    ]
    nodes = [
        _Series("total", "#1f77b4", [float(s.nodes) for s in samples]),
        _Series("spot", "#ff7f0e", [float(s.nodes_spot) for s in samples]),
        _Series("on-demand", "#9467bd", [float(s.nodes_on_demand) for s in samples]),
    ]
    cost = [
        _Series("USD/hour", "#8c564b", [s.cost_per_hour for s in samples]),
        _Series("CPU %", "#17becf", [s.cpu_utilization * 100 for s in samples], right=True),
        _Series("memory %", "#bcbd22", [s.memory_utilization * 100 for s in samples], right=True),
    ]
    return [
        _chart("Pods", minutes, pods),
        _chart("Nodes", minutes, nodes),
        _chart("Cost per hour (USD, left) and utilisation (%, right)", minutes, cost, lambda v: f"${_tick(v)}"),
    ]


_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; max-width: 960px; }
h1 { font-size: 1.5em; } h2 { font-size: 1.15em; margin-top: 1.6em; }
table { border-collapse: collapse; font-size: 0.9em; }
td, th { border: 1px solid #ccc; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
td.num { font-variant-numeric: tabular-nums; }
ul.checks { list-style: none; padding-left: 0; }
.ok { color: #1a7f37; } .failed { color: #cf222e; font-weight: bold; }
svg { display: block; margin: 1em 0; font-size: 11px; }
svg text { fill: #333; } svg text.title { font-size: 13px; font-weight: bold; }
svg .plot { fill: #fafafa; stroke: #999; } svg .grid { stroke: #e4e4e4; } svg .axis { stroke: #999; }
"""


def _rows(cells: Sequence[Sequence[str]], header: Sequence[str]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "\n".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in cells)
    return f"<table>\n<tr>{head}</tr>\n{body}\n</table>"


def html_report(timeline: Timeline) -> str:
    """The whole run on one page: summary, checks, pods/nodes/cost charts and the timeline of happenings."""
    name = html.escape(timeline.scenario)
    summary = [[str(k), _value(str(k), v)] for k, v in timeline.summary.items()]
    checks = "\n".join(
        f'<li class="{"ok" if met else "failed"}">[{"ok" if met else "FAILED"}] {html.escape(check)}</li>'
        for check, met in timeline.checks.items()
    )
    happenings = [[_clock(h.t), h.what, h.subject, h.text] for h in grouped(timeline.happenings)]
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en">',
            f'<head>\n<meta charset="utf-8">\n<title>Simulation: {name}</title>\n<style>{_CSS}</style>\n</head>',
            "<body>",
            f"<h1>Simulation: {name}</h1>",
            "<h2>Summary</h2>",
            _rows(summary, ["key", "value"]) if summary else "<p>No summary.</p>",
            "<h2>Checks</h2>",
            f'<ul class="checks">\n{checks}\n</ul>' if checks else "<p>No checks.</p>",
            "<h2>Over time</h2>",
            *_charts(timeline),
            "<h2>Timeline</h2>",
            _rows(happenings, ["time", "what", "subject", "text"]) if happenings else "<p>Nothing happened.</p>",
            "</body>",
            "</html>",
            "",
        ]
    )


def write_report(timeline: Timeline, path: pathlib.Path) -> pathlib.Path:
    """Write the HTML page to ``path``, creating its directories, and return the path for the caller to print."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(html_report(timeline), encoding="utf-8")
    return path
