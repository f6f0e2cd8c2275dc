"""The savings ledger: for every command that completes, what it predicted and what it realized. Pure.

A command predicts its saving when it starts (its candidates' prices less its replacement's cheapest option,
recorded on each candidate's record with the candidate's price and how many pods it displaces). It completes when
its candidates are deleted; the realized saving is then the candidates' prices less the prices of the
replacements actually launched (their instance type, capacity type and zone, as the NodeClaims now carry them).
A delete-only command realizes the candidates' prices.

Entries are kept on the candidates' NodePool, in the annotation ``serverless-karpenter.io/disruption-ledger``
(a JSON list, the newest ``KEPT`` entries): the candidates are gone by then, and the NodePool is where a user looks
(``autoscaler plan --disruption`` lists them).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Final

from pydantic import AwareDatetime, BaseModel, ConfigDict, TypeAdapter, ValidationError

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.apis.v1.nodepool import NodePool
from autoscaler.cloudprovider.types import InstanceType
from autoscaler.controllers.orchestration.record import DOMAIN, CommandRecord

LEDGER: Final = f"{DOMAIN}/disruption-ledger"
KEPT: Final = 10


class LedgerEntry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    reason: str
    nodes: tuple[str, ...]  # the candidates: "name (instance-type/capacity-type)"
    replacements: tuple[str, ...] = ()  # as launched: "name (instance-type/capacity-type)"
    predicted: float | None = None  # $/hour, when the command began
    realized: float | None = None  # $/hour, None when a price is not known
    displaced: int = 0  # pods the command moved
    started: AwareDatetime
    completed: AwareDatetime

    def line(self) -> str:
        def money(value: float | None) -> str:
            return "unknown" if value is None else f"${value:.4f}/h"

        moved = f" with {', '.join(self.replacements)}" if self.replacements else ""
        return (
            f"{self.completed:%Y-%m-%d %H:%M} {self.reason}: {', '.join(self.nodes)}{moved}; "
            f"predicted {money(self.predicted)}, realized {money(self.realized)}, {self.displaced} pod(s) displaced"
        )


_ENTRIES = TypeAdapter(list[LedgerEntry])


def read_ledger(nodepool: NodePool) -> list[LedgerEntry]:
    """The NodePool's entries, oldest first; an unreadable annotation reads as empty (the next write replaces it)."""
    text = (nodepool.metadata.annotations or {}).get(LEDGER)
    if not text:
        return []
    try:
        return _ENTRIES.validate_json(text)
    except ValidationError:
        return []


def with_entries(nodepool: NodePool, entries: Sequence[LedgerEntry]) -> str:
    """The annotation's new value: the NodePool's entries and ``entries``, the newest ``KEPT``."""
    kept = [*read_ledger(nodepool), *entries][-KEPT:]
    return json.dumps([json.loads(e.model_dump_json()) for e in kept], separators=(",", ":"))


def price_of(claim: NodeClaim, instance_types: Mapping[str, Sequence[InstanceType]]) -> float | None:
    """What ``claim`` costs per hour as launched (its type, capacity type and zone labels); None when unknown."""
    labels = claim.metadata.labels or {}
    pool, name = labels.get(wk.LABEL_NODEPOOL, ""), labels.get(wk.LABEL_INSTANCE_TYPE)
    zone, capacity_type = labels.get(wk.LABEL_ZONE), labels.get(wk.LABEL_CAPACITY_TYPE)
    instance_type = next((t for t in instance_types.get(pool, ()) if t.name == name), None)
    if instance_type is None or capacity_type is None:
        return None
    prices = [
        o.price
        for o in instance_type.offerings
        if o.capacity_type == capacity_type and (zone is None or o.zone == zone)
    ]
    return min(prices) if prices else None


def describe(claim: NodeClaim) -> str:
    labels = claim.metadata.labels or {}
    return f"{claim.name} ({labels.get(wk.LABEL_INSTANCE_TYPE)}/{labels.get(wk.LABEL_CAPACITY_TYPE)})"


def completed(
    deleted: Iterable[tuple[NodeClaim, CommandRecord | None]],
    claims: Sequence[NodeClaim],
    instance_types: Mapping[str, Sequence[InstanceType]],
    now: datetime,
) -> list[tuple[str, LedgerEntry]]:
    """(NodePool, entry) for each command whose candidates (with their records) this pass deleted; ``claims`` holds
    the replacements. A candidate without a record (an expiration) or with an unpriced one makes no entry."""
    by_name = {c.name: c for c in claims}
    commands: dict[tuple[str, datetime, tuple[str, ...]], list[tuple[NodeClaim, CommandRecord]]] = {}
    for claim, record in deleted:
        if record is None or record.saving is None:
            continue
        commands.setdefault((record.reason, record.started, record.created), []).append((claim, record))
    entries = []
    for (reason, started, created), members in commands.items():
        launched = [by_name[n] for n in created if n in by_name]
        prices = [r.price if r.price is not None else price_of(c, instance_types) for c, r in members]
        costs = [price_of(c, instance_types) for c in launched]
        known = None not in prices and None not in costs and len(launched) == len(created)
        realized = sum(p or 0.0 for p in prices) - sum(c or 0.0 for c in costs) if known else None
        entry = LedgerEntry(
            reason=reason,
            nodes=tuple(describe(c) for c, _ in members),
            replacements=tuple(describe(c) for c in launched),
            predicted=members[0][1].saving,
            realized=None if realized is None else round(realized, 6),
            displaced=sum(r.displaced or 0 for _, r in members),
            started=started,
            completed=now,
        )
        pool = (members[0][0].metadata.labels or {}).get(wk.LABEL_NODEPOOL, "")
        entries.append((pool, entry))
    return entries
