"""The validator as a placement check of the disruption controller (``autoscaler.controllers.disruption.verification``):
the embedded world runs it on every consolidation command before the command starts, next to the core's own check."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from autoscaler.scheduling.result import SchedulingResult
from autoscaler.scheduling.snapshot import ClusterSnapshot
from autoscaler_dev.scheduling_validator import validate
from autoscaler_dev.scheduling_validator.model import KubeObject


def check_consolidation(
    snapshot: ClusterSnapshot, pods: Sequence[KubeObject], result: SchedulingResult, excluded: Collection[str]
) -> list[str]:
    """What the validator finds wrong with where a command's pods go (a consolidation creates at most one node)."""
    report = validate(snapshot, pods, result, excluded_nodes=excluded, max_new_nodeclaims=1)
    return [f"scheduling validator: {error}" for error in report.errors]
