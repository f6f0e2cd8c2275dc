"""The termination function's metrics, gathered from a sweep's progress (the handler publishes them as EMF).

Names (``autoscaler.metrics``) are Karpenter's node and NodeClaim termination metrics, and ours in the same style.
"""

from __future__ import annotations

from autoscaler.controllers.termination.progress import SweepResult
from autoscaler.metrics import NODECLAIMS_TERMINATED, MetricPoint


def metric_points(result: SweepResult) -> list[MetricPoint]:
    """Every point the sweep's steps recorded; a sweep that released no NodeClaim reports a zero
    ``karpenter_nodeclaims_terminated_total`` so that the function's series (the dashboard's) stays continuous."""
    points = [point for progress in result.progress for point in progress.metrics]
    if not any(point.name == NODECLAIMS_TERMINATED for point in points):
        points.append(MetricPoint(NODECLAIMS_TERMINATED, 0))
    return points
