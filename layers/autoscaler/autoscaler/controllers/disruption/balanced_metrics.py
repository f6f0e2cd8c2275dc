"""What Balanced consolidation reports each pass (Karpenter's metric names). Pure.

``karpenter_consolidation_moves_total`` (decision ``approved`` / ``rejected``, nodepool, policy ``Balanced``) and
``karpenter_consolidation_score`` (the same dimensions; Karpenter's is a histogram, ours one value per move): the
pass's started command, per Balanced NodePool, and every move a Balanced NodePool refused while deciding.
"""

from __future__ import annotations

import math

from autoscaler import metrics as m
from autoscaler.controllers.disruption.balanced import BALANCED
from autoscaler.controllers.disruption.methods import Decisions
from autoscaler.metrics import MetricPoint


def balanced_metric_points(decisions: Decisions, started: bool) -> list[MetricPoint]:
    moves: list[tuple[str, str, float]] = [("rejected", pool, value) for pool, value in decisions.balanced_rejections]
    if decisions.command is not None and started:
        moves += [("approved", pool, s.value) for pool, s in sorted(decisions.command.scores.items())]
    points = []
    for decision, pool, value in moves:
        dimensions = (("decision", decision), ("nodepool", pool), ("policy", BALANCED))
        points.append(MetricPoint(m.CONSOLIDATION_MOVES, 1, dimensions=dimensions))
        if math.isfinite(value):  # a move that disrupts nothing scores infinity: counted, not measured
            points.append(MetricPoint(m.CONSOLIDATION_SCORE, round(value, 4), dimensions=dimensions))
    return points
