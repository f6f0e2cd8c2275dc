"""The terminationGracePeriod deadline of a deleted NodeClaim. Pure.

When a NodeClaim with ``spec.terminationGracePeriod`` is deleted, its deadline (deletionTimestamp plus the
grace period) is written once to the ``karpenter.sh/nodeclaim-termination-timestamp`` annotation, so that
every later step, in any invocation, reads the same deadline.
"""

from __future__ import annotations

from datetime import datetime

from autoscaler.apis.duration import DurationError, parse_duration
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.conditions import timestamp
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.clock import InvalidTimeError, parse_time_strict


class TerminationError(ValueError):
    """A terminating object carries data the drain cannot act on (a malformed time or duration)."""


def required_time(text: str, what: str) -> datetime:
    """A time the drain must act on: a malformed one is a TerminationError naming ``what`` it was."""
    try:
        return parse_time_strict(text)
    except InvalidTimeError as error:
        raise TerminationError(f"{what}: {error}") from error


def is_deleting(nodeclaim: NodeClaim) -> bool:
    return bool(nodeclaim.metadata.deletion_timestamp)


def deadline_to_record(nodeclaim: NodeClaim) -> str | None:
    """The annotation value to write, or None when there is nothing to write: no grace period, not being
    deleted, or already recorded (the first recorded value stands)."""
    annotations = nodeclaim.metadata.annotations or {}
    grace = nodeclaim.spec.termination_grace_period
    deletion = nodeclaim.metadata.deletion_timestamp
    if wk.ANNOTATION_TERMINATION_TIMESTAMP in annotations or not grace or not deletion:
        return None
    try:
        period = parse_duration(grace)
    except DurationError as error:
        raise TerminationError(f"NodeClaim {nodeclaim.name}: terminationGracePeriod {grace!r}: {error}") from error
    return timestamp(required_time(deletion, f"NodeClaim {nodeclaim.name}: deletionTimestamp") + period)


def termination_deadline(nodeclaim: NodeClaim | None) -> datetime | None:
    """When every remaining pod must be gone, from the recorded annotation; None when there is no deadline."""
    if nodeclaim is None:
        return None
    recorded = (nodeclaim.metadata.annotations or {}).get(wk.ANNOTATION_TERMINATION_TIMESTAMP)
    if recorded is None:
        return None
    return required_time(recorded, f"NodeClaim {nodeclaim.name}: annotation {wk.ANNOTATION_TERMINATION_TIMESTAMP}")
