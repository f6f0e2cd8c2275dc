"""The report's tables as HTML: the grouped summary, the checks, the decision log, the per-node timeline and the
timeline of happenings. Every text is escaped; rows are plain ``<tr>`` so that the page stays scannable when a
fleet has 150 nodes (the nodes nothing happened to are folded away)."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence

from autoscaler_dev.world.lifecycle import STEPS
from autoscaler_dev.world.progress import clock
from autoscaler_dev.world.report import decisions as log
from autoscaler_dev.world.report.summary import grouped_summary
from autoscaler_dev.world.timeline import Decision, NodeHistory, Timeline, grouped

FOLD_AFTER = 40  # a section of more rows than this starts folded


def table(header: Sequence[str], rows: Sequence[Sequence[str]], css: str = "") -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "\n".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    return f'<table class="{css}">\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody>\n</table>'


def _folded(title: str, content: str, count: int, div_id: str) -> str:
    opened = " open" if count <= FOLD_AFTER else ""
    return f'<details id="{div_id}"{opened}><summary>{html.escape(title)} ({count})</summary>\n{content}\n</details>'


def summary(timeline: Timeline) -> str:
    groups = grouped_summary(timeline.summary)
    if not groups:
        return "<p>No summary.</p>"
    parts = []
    for group, rows in groups.items():
        parts.append(f"<h3>{html.escape(group)}</h3>")
        parts.append(table(["", ""], [(r.label, r.text) for r in rows], "summary"))
    return '<div class="summary-groups">' + "\n".join(f"<section>{p}</section>" for p in _pairs(parts)) + "</div>"


def _pairs(parts: list[str]) -> list[str]:
    return ["\n".join(parts[i : i + 2]) for i in range(0, len(parts), 2)]


def checks(timeline: Timeline) -> str:
    items = "\n".join(
        f'<li class="{"ok" if met else "failed"}">[{"ok" if met else "FAILED"}] {html.escape(name)}</li>'
        for name, met in timeline.checks.items()
    )
    return f'<ul class="checks">\n{items}\n</ul>' if items else "<p>No checks.</p>"


def decision_log(decisions: Sequence[Decision]) -> str:
    sections = log.rows(decisions)
    if not sections:
        return '<div id="decision-log"><p>No decisions were logged.</p></div>'
    parts = [
        _folded(
            section,
            table(["time", "decision", "subject", "why"], [(clock(r.t), *r[1:]) for r in rows], "log"),
            len(rows),
            f"decisions-{section.lower().replace(' ', '-')}",
        )
        for section, rows in sections.items()
    ]
    return '<div id="decision-log">' + "\n".join(parts) + "</div>"


def _node_row(history: NodeHistory, fate: str) -> list[str]:
    steps = [clock(history.steps[s]) if s in history.steps else "" for s in STEPS]
    why = "; ".join(f"{step}: {reason}" for step, reason in history.why.items() if reason)
    return [
        history.nodeclaim,
        history.node,
        history.nodepool,
        f"{history.instance_type} {history.capacity_type}".strip(),
        history.zone,
        *steps,
        "; ".join(x for x in (why, fate) if x),
    ]


def node_table(nodes: Mapping[str, NodeHistory], decisions: Sequence[Decision]) -> str:
    """Nodes that were disrupted, cordoned or terminated first (their whole story), the others folded below."""
    fates = log.fates(decisions)
    header = ["NodeClaim", "node", "NodePool", "type", "zone", *STEPS, "why"]
    ordered = sorted(nodes.values(), key=lambda h: (h.steps.get("created", 0.0), h.nodeclaim))
    eventful = [h for h in ordered if {"disrupting", "cordoned", "deleting", "terminated"} & set(h.steps)]
    quiet = [h for h in ordered if h not in eventful]
    parts = []
    if eventful:
        rows = [_node_row(h, fates.get(h.nodeclaim, "")) for h in eventful]
        ended = table(header, rows, "nodes")
        parts.append(_folded("Disrupted, cordoned or terminated", ended, len(rows), "nodes-ended"))
    if quiet:
        rows = [_node_row(h, fates.get(h.nodeclaim, "")) for h in quiet]
        body = table(header, rows, "nodes")
        summary = f"<summary>Running to the end ({len(rows)})</summary>"
        parts.append(f'<details id="nodes-quiet">{summary}\n{body}\n</details>')
    return "\n".join(parts) if parts else "<p>No NodeClaims.</p>"


def happenings(timeline: Timeline) -> str:
    rows = [(clock(h.t), h.what, h.subject, h.text) for h in grouped(timeline.happenings)]
    return table(["time", "what", "subject", "text"], rows, "log") if rows else "<p>Nothing happened.</p>"
