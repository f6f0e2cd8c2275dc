"""The interruption function's metrics, derived from a batch report (the handler publishes them as EMF).

Counts follow Karpenter's ``karpenter_interruption_*`` metrics without the prefix (the CloudWatch namespace
plays its part), with ``message_type`` carrying Karpenter's message kinds; the queue-to-action latency is the
stack's ``InterruptionLatency``, which the dashboard charts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from autoscaler.controllers.interruption.report import BatchReport
from autoscaler.metrics import INTERRUPTION_LATENCY

BATCH_MESSAGES: Final = "interruption_batch_messages"
RECEIVED_MESSAGES: Final = "interruption_received_messages"
ACTIONS: Final = "interruption_actions"
MALFORMED_MESSAGES: Final = "interruption_malformed_messages"
FAILED_MESSAGES: Final = "interruption_failed_messages"
QUEUE_TO_ACTION: Final = INTERRUPTION_LATENCY  # the stack's dashboard charts it

Unit = Literal["Count", "Milliseconds"]


@dataclass(frozen=True)
class MetricPoint:
    name: str
    unit: Unit
    values: tuple[float, ...]
    dimensions: tuple[tuple[str, str], ...] = ()


def metric_points(report: BatchReport) -> list[MetricPoint]:
    points = [MetricPoint(BATCH_MESSAGES, "Count", (float(len(report.outcomes)),))]
    points += [
        MetricPoint(RECEIVED_MESSAGES, "Count", (float(count),), (("message_type", kind),))
        for kind, count in sorted(report.received_by_kind().items())
    ]
    points += [
        MetricPoint(ACTIONS, "Count", (float(count),), (("action", action), ("message_type", kind)))
        for (action, kind), count in sorted(report.actions().items())
    ]
    if malformed := report.malformed_count():
        points.append(MetricPoint(MALFORMED_MESSAGES, "Count", (float(malformed),)))
    if failed := report.failed_count():
        points.append(MetricPoint(FAILED_MESSAGES, "Count", (float(failed),)))
    if latencies := report.queue_latencies():
        points.append(MetricPoint(QUEUE_TO_ACTION, "Milliseconds", tuple(s * 1000 for s in latencies)))
    return points
