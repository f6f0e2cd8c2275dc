"""What an interruption batch did, per SQS message and per instance: the handler's typed result.

The handler turns ``retry_ids`` into partial batch failures and the counters into metrics; tests and the
benchmark read the outcomes directly.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Final

from autoscaler.controllers.interruption.decisions import Action
from autoscaler.controllers.interruption.messages import MessageKind

MALFORMED_KIND: Final = "malformed"


class Status(StrEnum):
    ACTED = "Acted"  # at least one write was made for it
    NO_OP = "NoOp"  # nothing to do: not ours, ignored kind or state, or already done
    MALFORMED = "Malformed"  # can never be handled: dead-lettered with its reason
    FAILED = "Failed"  # a transient failure: SQS redelivers it


@dataclass(frozen=True)
class MessageOutcome:
    message_id: str
    kind: str  # a MessageKind value, or "malformed"
    status: Status
    reason: str = ""
    sent_at: datetime | None = None
    acted_at: datetime | None = None  # when the first write for its instance(s) completed
    retry: bool = False  # report it as a batch item failure
    counted: bool = True  # malformed: counted now (a redelivered one is counted on its first receipt only)


@dataclass(frozen=True)
class InstanceResult:
    instance_id: str
    nodeclaim: str
    node: str | None
    kind: MessageKind
    action: Action
    message_ids: tuple[str, ...]
    cordoned_at: datetime | None = None
    acted_at: datetime | None = None
    marked_unavailable: bool = False
    error: str | None = None
    note: str = ""


@dataclass(frozen=True)
class BatchReport:
    outcomes: tuple[MessageOutcome, ...]
    instances: tuple[InstanceResult, ...] = ()
    index_rebuilt: bool = False
    index_size: int = 0

    @property
    def retry_ids(self) -> frozenset[str]:
        return frozenset(o.message_id for o in self.outcomes if o.retry)

    def received_by_kind(self) -> Counter[str]:
        return Counter(o.kind for o in self.outcomes)

    def actions(self) -> Counter[tuple[str, str]]:
        """(action, message kind) -> count, for instances where the action was carried out."""
        counts: Counter[tuple[str, str]] = Counter()
        for result in self.instances:
            if result.error is None and result.action is not Action.NONE:
                counts[(result.action.value, result.kind.value)] += 1
            if result.marked_unavailable:
                counts[("MarkUnavailable", result.kind.value)] += 1
        return counts

    def malformed_count(self) -> int:
        return sum(1 for o in self.outcomes if o.status is Status.MALFORMED and o.counted)

    def failed_count(self) -> int:
        return sum(1 for o in self.outcomes if o.status is Status.FAILED)

    def queue_latencies(self) -> list[float]:
        """Seconds from each acted-on message's arrival on the queue (SentTimestamp) to its action."""
        return [
            (o.acted_at - o.sent_at).total_seconds()
            for o in self.outcomes
            if o.status is Status.ACTED and o.acted_at is not None and o.sent_at is not None
        ]
