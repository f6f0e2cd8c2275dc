"""The interruption function's metrics, derived from a batch report (the handler publishes them as EMF).

Names (``autoscaler.metrics``) are Karpenter's ``karpenter_interruption_*`` where it has the metric, with
``message_type`` carrying Karpenter's message kinds; the queue duration has one value per acted-on message.
"""

from __future__ import annotations

from autoscaler import metrics as m
from autoscaler.controllers.interruption.report import BatchReport
from autoscaler.metrics import MetricPoint


def metric_points(report: BatchReport) -> list[MetricPoint]:
    points = [MetricPoint(m.INTERRUPTION_BATCH_SIZE, len(report.outcomes))]
    points += [
        MetricPoint(m.INTERRUPTION_RECEIVED_MESSAGES, count, dimensions=(("message_type", kind),))
        for kind, count in sorted(report.received_by_kind().items())
    ]
    points += [
        MetricPoint(m.INTERRUPTION_ACTIONS_PERFORMED, count, dimensions=(("action", action), ("message_type", kind)))
        for (action, kind), count in sorted(report.actions().items())
    ]
    if malformed := report.malformed_count():
        points.append(MetricPoint(m.INTERRUPTION_MALFORMED_MESSAGES, malformed))
    if failed := report.failed_count():
        points.append(MetricPoint(m.INTERRUPTION_FAILED_MESSAGES, failed))
    points += [
        MetricPoint(m.INTERRUPTION_MESSAGE_QUEUE_DURATION, seconds, "Seconds") for seconds in report.queue_latencies()
    ]
    return points
