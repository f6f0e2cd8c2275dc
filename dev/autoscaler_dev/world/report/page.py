"""A run's HTML page, and the tour's index linking one page per scenario.

The pages open offline: plotly.js is written once beside them (``PLOTLY_JS``) and loaded by a relative path;
nothing else is referenced.
"""

from __future__ import annotations

import html
import pathlib
from collections.abc import Mapping, Sequence
from typing import Any

import plotly
import plotly.offline

from autoscaler_dev.world.report import charts, tables
from autoscaler_dev.world.report.summary import entry, value_text
from autoscaler_dev.world.timeline import Timeline

PLOTLY_JS = f"plotly-{plotly.__version__}.min.js"

_CSS = """
body { font-family: system-ui, sans-serif; margin: 1.5em 2em; color: #222; max-width: 1280px; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 1.8em; border-bottom: 1px solid #ddd; }
h3 { font-size: 1em; margin: 0.8em 0 0.3em; }
nav a { margin-right: 1em; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.3em 0 1em; }
td, th { border: 1px solid #ddd; padding: 2px 7px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; position: sticky; top: 0; }
table.summary { width: 100%; } table.summary thead { display: none; }
table.summary td:first-child { color: #555; width: 60%; }
table.nodes td { white-space: nowrap; font-variant-numeric: tabular-nums; }
.summary-groups { display: grid; grid-template-columns: repeat(auto-fill, minmax(380px, 1fr)); gap: 0 2em; }
ul.checks { list-style: none; padding-left: 0; }
.ok { color: #1a7f37; } .failed { color: #cf222e; font-weight: bold; }
details { margin: 0.5em 0; overflow-x: auto; } summary { cursor: pointer; font-weight: 600; }
.chart { margin: 0.5em 0 1em; }
.figures td:first-child { font-weight: 600; }
"""
_SECTIONS = (
    ("checks", "Checks"),
    ("summary", "Summary"),
    ("over-time", "Over time"),
    ("decisions", "Decisions"),
    ("nodes", "Nodes"),
    ("timeline", "Timeline"),
)


def _head(title: str, plotly_src: str | None) -> str:
    script = f'<script src="{html.escape(plotly_src)}"></script>\n' if plotly_src else ""
    return (
        f'<head>\n<meta charset="utf-8">\n<title>{html.escape(title)}</title>\n{script}<style>{_CSS}</style>\n</head>'
    )


def html_report(timeline: Timeline, plotly_src: str = PLOTLY_JS) -> str:
    """The whole run on one page: checks, the grouped summary, the charts over time, the decision log, each
    node's life, and the timeline of happenings. ``plotly_src`` is where the page finds plotly.js."""
    samples, summary = timeline.samples, timeline.summary
    last = samples[-1].t if samples else 0.0
    nav = " ".join(f'<a href="#{key}">{title}</a>' for key, title in _SECTIONS)
    body = [
        f"<h1>Simulation: {html.escape(timeline.scenario)}</h1>",
        f"<nav>{nav}</nav>",
        '<h2 id="checks">Checks</h2>',
        tables.checks(timeline),
        '<h2 id="summary">Summary</h2>',
        tables.summary(timeline),
        '<h2 id="over-time">Over time</h2>',
        charts.pods(samples),
        charts.nodes(samples),
        charts.headroom(samples),
        charts.cost(samples),
        charts.mix(samples, "nodes_by_type", "Instance types over time", "types"),
        charts.mix(samples, "nodes_by_zone", "Zones over time", "zones"),
        charts.pending(timeline.pending_seconds, summary),
        '<h2 id="decisions">Decisions</h2>',
        tables.decision_log(timeline.decisions),
        '<h2 id="nodes">Nodes</h2>',
        charts.node_timeline(list(timeline.nodes.values()), last) if timeline.nodes else "",
        tables.node_table(timeline.nodes, timeline.decisions),
        '<h2 id="timeline">Timeline</h2>',
        tables.happenings(timeline),
    ]
    title = f"Simulation: {timeline.scenario}"
    page = ["<!DOCTYPE html>", '<html lang="en">', _head(title, plotly_src), "<body>", *body, "</body>", "</html>"]
    return "\n".join([*page, ""])


def write_plotly(directory: pathlib.Path) -> pathlib.Path:
    """plotly.js beside the pages (once per version), so that they draw their charts offline."""
    path = directory / PLOTLY_JS
    if not path.exists():
        path.write_text(plotly.offline.get_plotlyjs(), encoding="utf-8")
    return path


def write_report(timeline: Timeline, path: pathlib.Path) -> pathlib.Path:
    """Write the page to ``path`` (and plotly.js beside it), creating its directories; return the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_plotly(path.parent)
    path.write_text(html_report(timeline), encoding="utf-8")
    return path


# The figures every scenario's row of the tour shows; a scenario's own expectations come first.
_TOUR_KEYS = (
    "pods_running",
    "pods_total",
    "pod_pending_p90_s",
    "nodes_peak",
    "nodes",
    "cost_per_hour",
    "cost_lower_bound",
)


def _figures(summary: Mapping[str, Any], checks: Mapping[str, bool]) -> list[tuple[str, str, str]]:
    """(label, value, check mark) of what matters for one scenario: what it expects, then the common figures."""
    keys = [name.split(" ", 1)[0] for name in checks]
    rows, seen = [], set()
    for key in [*keys, *_TOUR_KEYS]:
        if key in seen or key not in summary:
            continue
        seen.add(key)
        _, label, unit = entry(key)
        met = [ok for name, ok in checks.items() if name.split(" ", 1)[0] == key]
        mark = "" if not met else ("ok" if all(met) else "FAILED")
        expected = ", ".join(name.split(" ", 1)[1] for name in checks if name.split(" ", 1)[0] == key and " " in name)
        rows.append((label, value_text(summary[key], unit) + (f" (expected {expected})" if expected else ""), mark))
    return rows


def tour_index(results: Sequence[Mapping[str, Any]]) -> str:
    """The tour's index: one section per scenario linking its page, with the figures that matter for it."""
    parts = []
    for result in results:
        page = pathlib.Path(str(result["page"])).name
        checks: Mapping[str, bool] = result["checks"]
        met = all(checks.values())
        rows = "".join(
            f'<tr><td>{html.escape(label)}</td><td>{html.escape(value)}</td><td class="{mark.lower()}">{mark}</td></tr>'
            for label, value, mark in _figures(result["summary"], checks)
        )
        parts.append(
            f'<section class="scenario"><h2><a href="{html.escape(page)}">{html.escape(str(result["scenario"]))}</a>'
            f' <span class="{"ok" if met else "failed"}">{"expected outcomes met" if met else "NOT met"}</span></h2>'
            f'<table class="figures"><tbody>{rows}</tbody></table></section>'
        )
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en">',
            _head("Serverless Karpenter: simulation tour", None),
            "<body><h1>Simulation tour</h1>",
            *parts,
            "</body></html>",
        ]
    )


def write_index(path: pathlib.Path, results: Sequence[Mapping[str, Any]]) -> pathlib.Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(tour_index(results), encoding="utf-8")
    return path
