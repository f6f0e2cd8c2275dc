"""Status conditions (metav1.Condition) as Karpenter manages them: one per type, ``lastTransitionTime``
moving only when the status changes, and a root ``Ready`` rolled up from the dependent conditions."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from autoscaler.apis.v1.common import Condition, ConditionStatus

READY = "Ready"


def timestamp(moment: datetime) -> str:
    """RFC 3339 in UTC with seconds, as Kubernetes writes times: ``2026-11-30T04:05:06Z``."""
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def get_condition(conditions: Sequence[Condition] | None, condition_type: str) -> Condition | None:
    return next((c for c in conditions or () if c.type == condition_type), None)


def is_true(conditions: Sequence[Condition] | None, condition_type: str) -> bool:
    condition = get_condition(conditions, condition_type)
    return condition is not None and condition.status == "True"


def set_condition(
    conditions: Sequence[Condition] | None,
    condition_type: str,
    status: ConditionStatus,
    reason: str,
    message: str,
    *,
    now: datetime,
    observed_generation: int | None = None,
) -> list[Condition]:
    """A new condition list with ``condition_type`` set; its transition time changes only with its status."""
    current = get_condition(conditions, condition_type)
    changed = current is None or current.status != status
    updated = Condition(
        type=condition_type,
        status=status,
        reason=reason or condition_type,
        message=message,
        last_transition_time=timestamp(now) if changed or current is None else current.last_transition_time,
        observed_generation=observed_generation,
    )
    kept = [c for c in conditions or () if c.type != condition_type]
    return [*kept, updated]


def roll_up_ready(
    conditions: Sequence[Condition] | None,
    dependents: Sequence[str],
    *,
    now: datetime,
    observed_generation: int | None = None,
) -> list[Condition]:
    """Set ``Ready`` from ``dependents``: True when all are True, else False naming the first that is not
    (Unknown while any is still unknown), as Karpenter's operatorpkg status conditions do."""
    for dependent in dependents:
        condition = get_condition(conditions, dependent)
        if condition is None or condition.status == "Unknown":
            status: ConditionStatus = "Unknown"
            reason, message = "AwaitingReconciliation", f"{dependent} has not been reconciled yet"
            break
        if condition.status == "False":
            status, reason = "False", f"{dependent}NotReady"
            message = f"{dependent}=False: {condition.message}" if condition.message else f"{dependent}=False"
            break
    else:
        status, reason, message = "True", READY, ""
    return set_condition(conditions, READY, status, reason, message, now=now, observed_generation=observed_generation)
