"""The decisions the functions took, read from their own structured logs: every log line that carries a
``decision`` field (provisioned, launched, disrupting, not-disrupted, expired, interruption, collected, ...), as a
log query in CloudWatch Logs Insights would find them. The core logs them for operators; the world only reads,
so the shipped package knows nothing of the report."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from autoscaler.clock import parse_time
from autoscaler_dev.world.timeline import Decision, Timeline

# What Powertools adds to every line; the rest is the decision's own fields.
_ENVELOPE = frozenset(
    {"level", "location", "message", "timestamp", "service", "name", "decision", "xray_trace_id", "sampling_rate"}
)


class DecisionLog:
    """Feeds ``timeline.decisions`` from each invocation's output (``Functions.readers``). ``start`` and
    ``elapsed`` are the virtual clock's; ``warned_at`` (instance -> virtual seconds of its spot warning) gives an
    interruption action its latency."""

    def __init__(
        self, timeline: Timeline, start: datetime, elapsed: Callable[[], float], warned_at: Mapping[str, float]
    ) -> None:
        self.timeline, self.start, self.elapsed, self.warned_at = timeline, start, elapsed, warned_at

    def read(self, function: str, output: str) -> None:
        for line in output.splitlines():
            if '"decision"' not in line:
                continue
            try:
                record = json.loads(line)
            except ValueError:
                continue
            kind = record.get("decision") if isinstance(record, dict) else None
            if not isinstance(kind, str):
                continue
            fields = {
                k: v for k, v in record.items() if k not in _ENVELOPE and not k.startswith(("function_", "cold_"))
            }
            if kind == "interruption":
                fields.update(self._latency(fields))
            message = str(record.get("message", ""))
            self.timeline.decisions.append(Decision(round(self.elapsed(), 1), function, kind, message, fields))

    def _latency(self, fields: Mapping[str, Any]) -> dict[str, float]:
        """Seconds from the spot warning to the first action (cordon) on its instance, when both are known."""
        warned = self.warned_at.get(str(fields.get("instance_id")))
        acted = parse_time(fields.get("cordoned_at") or fields.get("acted_at"))
        if warned is None or acted is None:
            return {}
        return {"latency_s": round((acted - self.start).total_seconds() - warned, 1)}
