"""What a producer asks of the orchestrator (a command: its candidates and the replacements to create), what the
orchestrator did in a pass (an outcome), and whether a NodeClaim is held by a command already. Pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.controllers.orchestration.legacy import in_old_command
from autoscaler.controllers.orchestration.record import (
    CommandRecord,
    CommandState,
    LedgerFigures,
    RecordError,
    is_marked,
    read_record,
)
from autoscaler.controllers.state.nodes import KubeObject


@dataclass(frozen=True)
class Target:
    """A candidate: the NodeClaim a command replaces, and its Node ({} before it registered)."""

    claim: NodeClaim
    node: KubeObject

    @property
    def name(self) -> str:
        return self.claim.name


@dataclass(frozen=True)
class Replacement:
    nodeclaim: NodeClaim  # as it will be created (generateName)
    replaces: tuple[str, ...]  # the candidates whose pods it is for


@dataclass(frozen=True)
class Command:
    """What a producer (a disruption method, the rebalance step) asks the orchestrator to carry out."""

    reason: str
    candidates: Sequence[Target]
    replacements: Sequence[Replacement] = ()
    message: str = ""  # the DisruptionReason condition's message
    ledger: Mapping[str, LedgerFigures] = field(default_factory=dict)  # candidate -> what the producer predicted


@dataclass
class Outcome:
    """What the orchestrator did in a pass (NodeClaim names)."""

    started: list[str] = field(default_factory=list)  # candidates whose command started
    created: list[NodeClaim] = field(default_factory=list)  # replacements created, as stored
    recorded: dict[str, list[str]] = field(default_factory=dict)  # candidate -> its replacements, as recorded
    adopted: list[str] = field(default_factory=list)  # replacements a pass that died created, taken up
    deleted: dict[str, str] = field(default_factory=dict)  # candidate -> reason
    waiting: dict[str, str] = field(default_factory=dict)  # candidate -> what it waits for
    abandoned: dict[str, str] = field(default_factory=dict)  # candidate -> why its command was given up
    failed: dict[str, str] = field(default_factory=dict)  # writes that failed (the next pass retries)
    upgraded: list[str] = field(default_factory=list)  # NodeClaims whose old-format records were replaced

    @property
    def created_names(self) -> list[str]:
        return [c.name for c in self.created]


def in_command(claim: NodeClaim) -> bool:
    """Whether a command holds the NodeClaim now (a mark, a record not given up, an unreadable record, or an old
    format in progress): no other command may start for it."""
    try:
        record = read_record(claim)
    except RecordError:
        return True
    return is_marked(claim) or in_old_command(claim) or (record is not None and record.state is not CommandState.FAILED)


def record_or_none(claim: NodeClaim) -> CommandRecord | None:
    try:
        return read_record(claim)
    except RecordError:
        return None  # the clean-up's business
