"""The report's charts, drawn with plotly (offline: the page loads plotly.js from a file written beside it).

Each function returns one chart as an HTML ``<div>`` (plotly's own markup and the script that draws it), titled,
with virtual minutes on the x axis.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import plotly.graph_objects as go

from autoscaler_dev.world.timeline import NodeHistory, Sample

MIX_SHOWN = 8  # instance types (or zones) drawn on their own in a mix; the rest are "other"
_CONFIG = {"displaylogo": False, "responsive": True}
# A phase of a node's life: its name, colour, and the steps that start and end it (the first one present).
PHASES = (
    ("booting", "#9ecae1", ("created",), ("initialized", "cordoned", "deleting", "terminated")),
    ("running", "#31a354", ("initialized",), ("drifted", "disrupting", "cordoned", "deleting", "terminated")),
    ("drifted, waiting its turn", "#fdd835", ("drifted",), ("disrupting", "cordoned", "deleting", "terminated")),
    ("marked for disruption", "#fdae6b", ("disrupting",), ("cordoned", "deleting", "terminated")),
    ("cordoned, draining", "#e6550d", ("cordoned", "deleting"), ("drained", "terminated")),
    ("terminating", "#756bb1", ("drained",), ("terminated",)),
)


def _div(figure: go.Figure, div_id: str) -> str:
    figure.update_layout(
        margin={"l": 60, "r": 30, "t": 50, "b": 45},
        legend={"orientation": "h", "y": -0.18},
        template="plotly_white",
        hovermode="x unified",
    )
    html: str = figure.to_html(full_html=False, include_plotlyjs=False, div_id=div_id, config=_CONFIG)
    return f'<div class="chart" id="chart-{div_id}">{html}</div>'


def _minutes(samples: Sequence[Sample]) -> list[float]:
    return [round(s.t / 60, 2) for s in samples]


def _line(
    samples: Sequence[Sample],
    value: Callable[[Sample], float | None],
    name: str,
    color: str,
    dash: str = "solid",
    **extra: Any,
) -> go.Scatter:
    """One series over virtual minutes; ``extra`` are plotly's trace options (``stackgroup``, ``yaxis``, ...)."""
    return go.Scatter(
        x=_minutes(samples), y=[value(s) for s in samples], name=name, line={"color": color, "dash": dash}, **extra
    )


def pods(samples: Sequence[Sample]) -> str:
    figure = go.Figure(
        [
            _line(samples, lambda s: s.pods_running, "running", "#2ca02c"),
            _line(samples, lambda s: s.pods_pending, "pending", "#d62728"),
            _line(samples, lambda s: s.pods_total, "total", "#444", "dot"),
        ]
    )
    figure.update_layout(title="Pods", xaxis_title="minutes", yaxis_title="pods", height=320)
    return _div(figure, "pods")


def headroom(samples: Sequence[Sample]) -> str:
    """CapacityBuffer headroom (chunks that fit on Ready nodes now) against pending pods: a burst that lands on
    the headroom shows as a dip in it with no pending pods; empty when the run had no buffer."""
    if all(s.headroom is None for s in samples):
        return ""
    figure = go.Figure(
        [
            _line(samples, lambda s: s.headroom, "buffer headroom (chunks)", "#1b9e77", line_shape="hv"),
            _line(samples, lambda s: s.pods_pending, "pending pods", "#d62728", "dot"),
        ]
    )
    figure.update_layout(title="CapacityBuffer headroom over time", xaxis_title="minutes", yaxis_title="chunks / pods")
    figure.update_layout(height=300, yaxis={"rangemode": "tozero"})
    return _div(figure, "headroom")


def nodes(samples: Sequence[Sample]) -> str:
    """Spot and on-demand stacked, the total drawn on top of them, so that no line hides another."""
    figure = go.Figure(
        [
            _line(samples, lambda s: s.nodes_on_demand, "on-demand", "#9467bd", stackgroup="c"),
            _line(samples, lambda s: s.nodes_spot, "spot", "#ff7f0e", stackgroup="c"),
            _line(samples, lambda s: s.nodes, "total", "#111", "dot"),
            _line(samples, lambda s: s.nodeclaims, "NodeClaims", "#1f77b4", "dash"),
        ]
    )
    figure.update_layout(title="Nodes (spot and on-demand stacked)", xaxis_title="minutes", yaxis_title="nodes")
    figure.update_layout(height=320)
    return _div(figure, "nodes")


def cost(samples: Sequence[Sample]) -> str:
    """Cost per hour against the lower bound of what the pods' requests cost, and utilisation on the right."""
    figure = go.Figure(
        [
            _line(samples, lambda s: s.cost_per_hour, "cost $/h", "#8c564b"),
            _line(samples, lambda s: s.cost_lower_bound, "lower bound $/h", "#8c564b", "dash"),
            _line(samples, lambda s: s.cpu_utilization * 100, "CPU requested %", "#17becf", "dot", yaxis="y2"),
            _line(samples, lambda s: s.memory_utilization * 100, "memory requested %", "#bcbd22", "dot", yaxis="y2"),
        ]
    )
    figure.update_layout(
        title="Cost per hour against its lower bound, and utilisation",
        xaxis_title="minutes",
        yaxis={"title": "USD per hour", "rangemode": "tozero"},
        yaxis2={"title": "% of allocatable", "overlaying": "y", "side": "right", "range": [0, 100]},
        height=340,
    )
    return _div(figure, "cost")


def mix(samples: Sequence[Sample], attribute: str, title: str, div_id: str) -> str:
    """Nodes by a label over time (``nodes_by_type`` or ``nodes_by_zone``), stacked; the largest few on their
    own, the rest as "other"."""
    series = [getattr(s, attribute) for s in samples]
    peaks: Counter[str] = Counter()
    for counts in series:
        for key, count in counts.items():
            peaks[key] = max(peaks[key], count)
    shown = [key for key, _ in peaks.most_common(MIX_SHOWN)]
    x = _minutes(samples)
    traces = [go.Scatter(x=x, y=[c.get(key, 0) for c in series], name=key or "?", stackgroup="m") for key in shown]
    if len(peaks) > len(shown):
        rest = [sum(v for k, v in c.items() if k not in shown) for c in series]
        traces.append(go.Scatter(x=x, y=rest, name="other", stackgroup="m", line={"color": "#bbb"}))
    figure = go.Figure(traces)
    figure.update_layout(title=title, xaxis_title="minutes", yaxis_title="nodes", height=320)
    return _div(figure, div_id)


def pending(seconds: Sequence[float], percentiles: Mapping[str, Any]) -> str:
    """How long pods waited to be scheduled, with the percentiles marked."""
    figure = go.Figure([go.Histogram(x=list(seconds), name="pods", marker={"color": "#6baed6"}, nbinsx=40)])
    for key, label in (("pod_pending_p50_s", "p50"), ("pod_pending_p90_s", "p90"), ("pod_pending_p99_s", "p99")):
        value = percentiles.get(key)
        if isinstance(value, int | float):
            figure.add_vline(x=value, line_dash="dash", annotation_text=f"{label} {value:g}s")
    figure.update_layout(title="Pod pending time", xaxis_title="seconds from creation to scheduled", height=300)
    figure.update_layout(yaxis_title="pods", hovermode="closest")
    return _div(figure, "pending")


def _phase(history: NodeHistory, starts: Sequence[str], ends: Sequence[str], last: float) -> tuple[float, float] | None:
    begin = next((history.steps[s] for s in starts if s in history.steps), None)
    if begin is None:
        return None
    after = [history.steps[s] for s in ends if s in history.steps and history.steps[s] >= begin]
    return begin, min(after) if after else last


def node_timeline(histories: Sequence[NodeHistory], last: float) -> str:
    """One bar per NodeClaim (in order of creation), coloured by phase: booting, running, drifted and waiting for
    its turn, marked for disruption, cordoned and draining, terminating. ``last`` (virtual seconds) closes phases
    still going at the end."""
    ordered = sorted(histories, key=lambda h: (h.steps.get("created", 0.0), h.nodeclaim))
    labels = [f"{h.nodeclaim} {h.instance_type} {h.capacity_type}".strip() for h in ordered]
    traces = []
    for name, color, starts, ends in PHASES:
        ys, bases, widths = [], [], []
        for label, history in zip(labels, ordered, strict=True):
            span = _phase(history, starts, ends, last)
            if span is not None:
                ys.append(label)
                bases.append(round(span[0] / 60, 2))
                widths.append(round(max(span[1] - span[0], 1.0) / 60, 2))
        traces.append(
            go.Bar(y=ys, x=widths, base=bases, orientation="h", name=name, marker={"color": color}, width=0.8)
        )
    figure = go.Figure(traces)
    figure.update_layout(
        title="Each NodeClaim's life (minutes)",
        barmode="overlay",
        height=max(260, 14 * len(ordered) + 140),
        xaxis_title="minutes",
        yaxis={"autorange": "reversed", "tickfont": {"size": 9}, "type": "category", "categoryarray": labels},
        hovermode="closest",
    )
    return _div(figure, "node-timeline")
