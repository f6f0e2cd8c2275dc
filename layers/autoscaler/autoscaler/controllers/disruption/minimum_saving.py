"""The opt-in minimum saving of a consolidation, per NodePool (beyond Karpenter, off by default). Pure.

A NodePool annotated ``serverless-karpenter.io/consolidation-minimum-saving`` consolidates its underutilized nodes
only when the command saves at least that much: ``"0.05"`` is $0.05 per hour, ``"20%"`` a fifth of what the
candidates cost now. A command that takes nodes of several NodePools must meet the strictest of theirs. Without the
annotation nothing changes, so Karpenter's API and behaviour stay as they are. An unreadable value is ignored with a
warning in the log, as if the annotation were not there.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Final

from autoscaler.apis.v1.nodepool import NodePool
from autoscaler.controllers.disruption.candidates import Candidate
from autoscaler.controllers.orchestration.record import DOMAIN

log = logging.getLogger(__name__)
MINIMUM_SAVING: Final = f"{DOMAIN}/consolidation-minimum-saving"


class UnreadableMinimum(ValueError):
    """The annotation's value is neither dollars per hour nor a percentage."""


def minimum_of(nodepool: NodePool, price: float) -> float:
    """The NodePool's minimum saving in $/hour for candidates costing ``price``; 0 without the annotation."""
    text = ((nodepool.metadata.annotations or {}).get(MINIMUM_SAVING) or "").strip()
    if not text:
        return 0.0
    try:
        value = float(text[:-1]) * price / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise UnreadableMinimum(f"{MINIMUM_SAVING} of NodePool {nodepool.name}: {text!r} is not $/hour or N%") from None
    if value < 0:
        raise UnreadableMinimum(f"{MINIMUM_SAVING} of NodePool {nodepool.name}: {text!r} is negative")
    return value


def below_minimum(candidates: Sequence[Candidate], saving: float | None) -> str | None:
    """Why a command saving ``saving`` ($/hour) is not worth it under its NodePools' minimums, or None."""
    price = sum(c.price or 0.0 for c in candidates)
    pools = {c.nodepool.name: c.nodepool for c in candidates}
    required, strictest = 0.0, ""
    for name, pool in sorted(pools.items()):
        try:
            minimum = minimum_of(pool, price)
        except UnreadableMinimum as error:
            log.warning("ignored: %s", error)
            continue
        if minimum > required:
            required, strictest = minimum, name
    if required <= 0 or (saving is not None and saving >= required):
        return None
    shown = "unknown" if saving is None else f"${saving:.4f}/h"
    return f"saving {shown} is below NodePool {strictest}'s minimum of ${required:.4f}/h ({MINIMUM_SAVING})"
