"""The command record: one annotation on each candidate NodeClaim saying which command holds it and how far it
got, so that any later pass, in any invocation, takes the command up where the last one left it. Pure.

``serverless-karpenter.io/disruption-command`` holds the record as JSON::

    {"reason": "Drifted", "expected": 1, "created": ["default-x7k2p"],
     "started": "2026-12-01T12:00:00Z", "state": "Replacing"}

- ``reason``: which policy runs it (``policy``), as on the DisruptionReason condition, events and metrics;
- ``expected``: how many replacements the command creates for this candidate; ``created``: their names, once
  known (each replacement is annotated ``serverless-karpenter.io/replaces`` with the candidates it stands in
  for when it is created, so that a pass that died before recording its name can adopt it);
- ``started``: when the command began; its replacements must be initialized within the policy's timeout;
- ``state``: ``Launching`` (replacements being created: names may be missing), ``Replacing`` (every
  replacement recorded: waiting for them to initialize, then the candidate is deleted) or ``Failed`` (given up,
  kept by policies that must not start again).

The savings ledger (docs/disruption.md), when the producer priced its command: ``saving``, the whole command's
predicted saving in $/hour (the same on each of its candidates); ``price``, this candidate's price per hour when
the command began; ``displaced``, how many of its pods the command moves. The realized saving is worked out when
the command completes (``ledger``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Final

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, ValidationError

from autoscaler.apis.v1.conditions import is_true
from autoscaler.apis.v1.nodeclaim import NodeClaim

DOMAIN: Final = "serverless-karpenter.io"
COMMAND: Final = f"{DOMAIN}/disruption-command"  # the record, on each candidate
REPLACES: Final = f"{DOMAIN}/replaces"  # on each replacement: the candidates it stands in for, comma-separated
DISRUPTION_REASON: Final = "DisruptionReason"  # the condition on candidates whose command took budget at start


class CommandState(StrEnum):
    LAUNCHING = "Launching"
    REPLACING = "Replacing"
    FAILED = "Failed"


class CommandRecord(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    reason: str = Field(min_length=1)
    expected: int = Field(ge=0)
    created: tuple[str, ...] = ()
    started: AwareDatetime
    state: CommandState
    saving: float | None = None
    price: float | None = None
    displaced: int | None = Field(default=None, ge=0)

    def text(self) -> str:
        return self.model_dump_json(exclude_none=True)

    def moved_to(self, state: CommandState, created: tuple[str, ...] | None = None) -> CommandRecord:
        return self.model_copy(update={"state": state, "created": self.created if created is None else created})


class RecordError(ValueError):
    """A NodeClaim's record is there but cannot be read (edited by hand, or written by a newer version)."""


@dataclass(frozen=True)
class LedgerFigures:
    """What a producer predicted for one candidate: the command's saving ($/h), the candidate's price and pods."""

    saving: float | None = None
    price: float | None = None
    displaced: int | None = None


def new_record(
    reason: str,
    expected: int,
    started: datetime,
    state: CommandState,
    created: tuple[str, ...] = (),
    *,
    ledger: LedgerFigures | None = None,
) -> CommandRecord:
    figures = ledger or LedgerFigures()
    return CommandRecord(
        reason=reason,
        expected=expected,
        created=created,
        started=started,
        state=state,
        saving=figures.saving,
        price=figures.price,
        displaced=figures.displaced,
    )


def read_record(claim: NodeClaim) -> CommandRecord | None:
    """The NodeClaim's record, None when it has none; raises RecordError when it is unreadable."""
    text = (claim.metadata.annotations or {}).get(COMMAND)
    if text is None:
        return None
    try:
        return CommandRecord.model_validate_json(text)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "value"
        raise RecordError(f"{COMMAND} of NodeClaim {claim.name}: {where}: {first['msg']}") from None


def patched(claim: NodeClaim, annotations: Mapping[str, str | None]) -> NodeClaim:
    """``claim`` as it is once the merge patch ``annotations`` is written (a None value removes the key)."""
    merged = {**(claim.metadata.annotations or {}), **annotations}
    kept = {k: v for k, v in merged.items() if v is not None}
    return claim.model_copy(update={"metadata": claim.metadata.model_copy(update={"annotations": kept})})


def replaces(claim: NodeClaim) -> tuple[str, ...]:
    """The candidates a replacement NodeClaim stands in for (one replacement may serve several)."""
    value = (claim.metadata.annotations or {}).get(REPLACES, "")
    return tuple(name.strip() for name in value.split(",") if name.strip())


def is_marked(claim: NodeClaim) -> bool:
    """Marked by a command that took its budget at start: such nodes count against the budgets."""
    return is_true(claim.status.conditions if claim.status else None, DISRUPTION_REASON)
