"""The terminationGracePeriod deadline of a deleted NodeClaim. Pure.

When a NodeClaim with ``spec.terminationGracePeriod`` is deleted, its deadline (deletionTimestamp plus the
grace period) is written once to the ``karpenter.sh/nodeclaim-termination-timestamp`` annotation, so that
every later step, in any invocation, reads the same deadline.
"""

from __future__ import annotations

from datetime import UTC, datetime

from autoscaler.apis.duration import DurationError, parse_duration
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.conditions import timestamp
from autoscaler.apis.v1.nodeclaim import NodeClaim


class TerminationError(ValueError):
    """A terminating object carries data the drain cannot act on (a malformed time or duration)."""


def parse_timestamp(text: str) -> datetime:
    """An RFC 3339 time as Kubernetes writes it (``2026-11-30T04:05:06Z``), as an aware UTC datetime."""
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError as error:
        raise TerminationError(f"malformed RFC 3339 time {text!r}") from error
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


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
    return timestamp(parse_timestamp(deletion) + period)


def termination_deadline(nodeclaim: NodeClaim | None) -> datetime | None:
    """When every remaining pod must be gone, from the recorded annotation; None when there is no deadline."""
    if nodeclaim is None:
        return None
    recorded = (nodeclaim.metadata.annotations or {}).get(wk.ANNOTATION_TERMINATION_TIMESTAMP)
    if recorded is None:
        return None
    try:
        return parse_timestamp(recorded)
    except TerminationError as error:
        raise TerminationError(
            f"NodeClaim {nodeclaim.name}: annotation {wk.ANNOTATION_TERMINATION_TIMESTAMP}: {error}"
        ) from error
