"""The run as plain text for the terminal: the grouped summary with its checks, and the grouped timeline."""

from __future__ import annotations

from autoscaler_dev.world.progress import clock
from autoscaler_dev.world.report.summary import grouped_summary
from autoscaler_dev.world.timeline import Timeline, grouped


def check_lines(timeline: Timeline) -> list[str]:
    return [f"[{'ok' if met else 'FAILED'}] {name}" for name, met in timeline.checks.items()]


def summary_table(timeline: Timeline) -> str:
    """The summary by group, one ``label  value`` line per key, then one ``[ok]``/``[FAILED]`` line per check."""
    groups = grouped_summary(timeline.summary)
    width = max((len(row.label) for rows in groups.values() for row in rows), default=0)
    parts = [f"scenario: {timeline.scenario}"]
    for group, rows in groups.items():
        parts.append("\n".join([group, *(f"  {row.label.ljust(width)}  {row.text}" for row in rows)]))
    checks = check_lines(timeline)
    if checks:
        parts.append("\n".join(checks))
    return "\n\n".join(parts)


def timeline_text(timeline: Timeline, limit: int = 40) -> str:
    """The first ``limit`` lines of the grouped timeline, aligned, then how many were left out."""
    lines_in = grouped(timeline.happenings)
    shown = lines_in[: max(0, limit)]
    what_w = max((len(h.what) for h in shown), default=0)
    subject_w = max((len(h.subject) for h in shown), default=0)
    lines = [f"{clock(h.t)}  {h.what.ljust(what_w)}  {h.subject.ljust(subject_w)}  {h.text}".rstrip() for h in shown]
    rest = len(lines_in) - len(shown)
    if rest > 0:
        lines.append(f"... {rest} more")
    return "\n".join(lines)
