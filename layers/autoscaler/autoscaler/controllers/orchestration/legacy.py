"""The record formats of earlier versions, read once when an installation is upgraded. Pure.

Before one orchestrator ran both, disruption and rebalance replacement each kept their own annotations:

- disruption: ``serverless-karpenter.io/disruption`` on each candidate, ``{"expect": N, "replacements": [names]}``,
  with the ``DisruptionReason`` condition (its reason and transition time: the command's reason and start);
- rebalance: ``serverless-karpenter.io/rebalance-replacement`` on the old NodeClaim, the replacements'
  names comma-separated (empty when none were needed) or ``Failed``, and ``serverless-karpenter.io/rebalance-replaces``
  on each replacement, next to ``serverless-karpenter.io/replaces`` (which stays).

Each becomes the record it stands for, and the old annotations are removed in the same write, so a command in
flight during an upgrade carries on: an old disruption command becomes ``Launching`` (its names recorded so far;
the orchestrator adopts the rest, or gives it up when they were never created, as before); an old rebalance list
becomes ``Replacing``, started when its first replacement was created (its timeout ran from there); ``Failed``
stays failed; replacements an old rebalance pass created without recording them are adopted. A disruption mark
whose annotation is unreadable, or whose reason is unknown, becomes nothing: the orchestrator then gives the mark
up, as the old version did.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from autoscaler.apis.v1.conditions import get_condition
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.clock import parse_time
from autoscaler.controllers.orchestration.budgets import DRIFTED
from autoscaler.controllers.orchestration.policy import DISRUPTION_POLICIES, REBALANCE_RECOMMENDATION
from autoscaler.controllers.orchestration.record import (
    COMMAND,
    DISRUPTION_REASON,
    DOMAIN,
    CommandRecord,
    CommandState,
    is_marked,
    new_record,
)

OLD_DISRUPTION: Final = f"{DOMAIN}/disruption"
OLD_REBALANCE_REPLACEMENT: Final = f"{DOMAIN}/rebalance-replacement"
OLD_REBALANCE_REPLACES: Final = f"{DOMAIN}/rebalance-replaces"
OLD_REBALANCE_FAILED: Final = "Failed"
_DISRUPTION_REASONS = frozenset(p.reason for p in DISRUPTION_POLICIES)


@dataclass(frozen=True)
class Upgrade:
    """One NodeClaim's old annotations, and the record they become (None: nothing)."""

    name: str
    reason: str  # whose policy upgrades it: the pass that runs that reason
    record: CommandRecord | None
    drop: tuple[str, ...]


def has_old_record(claim: NodeClaim) -> bool:
    """A candidate's old record not read yet (in progress or not)."""
    annotations = claim.metadata.annotations or {}
    return OLD_DISRUPTION in annotations or OLD_REBALANCE_REPLACEMENT in annotations


def in_old_command(claim: NodeClaim) -> bool:
    """An old rebalance record still in progress (an old disruption record comes with its DisruptionReason mark)."""
    value = (claim.metadata.annotations or {}).get(OLD_REBALANCE_REPLACEMENT)
    return value is not None and value != OLD_REBALANCE_FAILED


def _first_created(claims: Sequence[NodeClaim], now: datetime) -> datetime:
    times = [t for c in claims if (t := c.created_at) is not None]
    return min(times, default=now)


def _old_disruption(claim: NodeClaim, now: datetime) -> Upgrade:
    condition = get_condition(claim.status.conditions if claim.status else None, DISRUPTION_REASON)
    reason = condition.reason if condition and condition.reason in _DISRUPTION_REASONS else None
    record = None
    if is_marked(claim) and reason is not None:
        try:
            value = json.loads((claim.metadata.annotations or {})[OLD_DISRUPTION])
        except ValueError:
            value = None
        names = value.get("replacements") if isinstance(value, dict) else None
        expect = value.get("expect") if isinstance(value, dict) else None
        if isinstance(expect, int) and expect >= 0 and isinstance(names, list):
            started = parse_time(condition.last_transition_time if condition else None) or now
            record = new_record(reason, expect, started, CommandState.LAUNCHING, tuple(str(n) for n in names))
    return Upgrade(claim.name, reason or DRIFTED, record, (OLD_DISRUPTION,))


def _old_rebalance(claim: NodeClaim, by_name: dict[str, NodeClaim], now: datetime) -> Upgrade:
    value = (claim.metadata.annotations or {})[OLD_REBALANCE_REPLACEMENT]
    if value == OLD_REBALANCE_FAILED:
        record = new_record(REBALANCE_RECOMMENDATION, 0, now, CommandState.FAILED)
    else:
        names = tuple(n.strip() for n in value.split(",") if n.strip())
        started = _first_created([by_name[n] for n in names if n in by_name], now)
        record = new_record(REBALANCE_RECOMMENDATION, len(names), started, CommandState.REPLACING, names)
    return Upgrade(claim.name, REBALANCE_RECOMMENDATION, record, (OLD_REBALANCE_REPLACEMENT,))


def upgrades(claims: Sequence[NodeClaim], now: datetime) -> list[Upgrade]:
    """What the old annotations among ``claims`` become, candidates before the replacements that name them (so
    that a replacement loses its old annotation only once its candidate's record is written)."""
    by_name = {c.name: c for c in claims}
    orphans: dict[str, list[NodeClaim]] = {}  # old rebalance candidate -> replacements it never recorded
    for claim in claims:
        for name in (claim.metadata.annotations or {}).get(OLD_REBALANCE_REPLACES, "").split(","):
            if name.strip():
                orphans.setdefault(name.strip(), []).append(claim)
    candidates, replacements = [], []
    for claim in claims:
        annotations = claim.metadata.annotations or {}
        if claim.metadata.deletion_timestamp:
            continue
        if OLD_DISRUPTION in annotations:
            candidates.append(_old_disruption(claim, now))
        elif OLD_REBALANCE_REPLACEMENT in annotations:
            candidates.append(_old_rebalance(claim, by_name, now))
        elif claim.name in orphans and COMMAND not in annotations:
            found = orphans[claim.name]
            record = new_record(
                REBALANCE_RECOMMENDATION, len(found), _first_created(found, now), CommandState.LAUNCHING
            )
            candidates.append(Upgrade(claim.name, REBALANCE_RECOMMENDATION, record, ()))
        if OLD_REBALANCE_REPLACES in annotations:
            replacements.append(Upgrade(claim.name, REBALANCE_RECOMMENDATION, None, (OLD_REBALANCE_REPLACES,)))
    return [*candidates, *replacements]
