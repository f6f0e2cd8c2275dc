"""One NodeClaim as a lifecycle pass works on it: the object as read, the copy the steps change, and how
those changes are written back (status first, through the status subresource and guarded by the
resourceVersion read; then labels and annotations as a merge patch, which cannot conflict).

NodeClaim conditions as Karpenter v1 keeps them: ``Launched``, ``Registered`` and ``Initialized``, each
Unknown ("AwaitingReconciliation") until a step decides it, rolled up into ``Ready``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from autoscaler.apis.v1.common import Condition, ConditionStatus
from autoscaler.apis.v1.conditions import READY, get_condition, roll_up_ready, set_condition
from autoscaler.apis.v1.nodeclaim import INITIALIZED, LAUNCHED, REGISTERED, NodeClaim, NodeClaimStatus
from autoscaler.kube.port import ObjectRef

DEPENDENTS = (LAUNCHED, REGISTERED, INITIALIZED)
AWAITING = "AwaitingReconciliation"
AWAITING_MESSAGE = "object is awaiting reconciliation"
MESSAGE_LIMIT = 300  # longer cloud errors are cut, as Karpenter cuts them


def truncate(message: str) -> str:
    return message if len(message) < MESSAGE_LIMIT else message[:MESSAGE_LIMIT] + "..."


def with_defaults(conditions: list[Condition] | None, now: datetime) -> list[Condition]:
    """Every lifecycle condition present: a missing one starts Unknown, as Karpenter initializes them."""
    result = list(conditions or [])
    missing = [t for t in (*DEPENDENTS, READY) if get_condition(result, t) is None]
    for condition_type in missing:
        result = set_condition(result, condition_type, "Unknown", AWAITING, AWAITING_MESSAGE, now=now)
    return roll_up_ready(result, DEPENDENTS, now=now) if missing else result


@dataclass
class ClaimWork:
    stored: NodeClaim  # as read: its resourceVersion guards the status write
    now: datetime
    claim: NodeClaim = field(init=False)
    deleted: bool = False  # a step deleted the NodeClaim: nothing more is written

    def __post_init__(self) -> None:
        status = self.stored.status or NodeClaimStatus()
        conditions = with_defaults(status.conditions, self.now)
        self.claim = self.stored.model_copy(update={"status": status.model_copy(update={"conditions": conditions})})

    @property
    def name(self) -> str:
        return self.claim.name

    @property
    def ref(self) -> ObjectRef:
        return self.claim.ref

    @property
    def status(self) -> NodeClaimStatus:
        assert self.claim.status is not None  # set in __post_init__
        return self.claim.status

    @property
    def labels(self) -> dict[str, str]:
        return dict(self.claim.metadata.labels or {})

    def condition(self, condition_type: str) -> Condition | None:
        return get_condition(self.status.conditions, condition_type)

    def is_true(self, condition_type: str) -> bool:
        condition = self.condition(condition_type)
        return condition is not None and condition.status == "True"

    def set(self, condition_type: str, status: ConditionStatus, reason: str = "", message: str = "") -> None:
        conditions = set_condition(self.status.conditions, condition_type, status, reason, message, now=self.now)
        conditions = roll_up_ready(conditions, DEPENDENTS, now=self.now)
        self.update_status(conditions=conditions)

    def update_status(self, **fields: object) -> None:
        self.claim = self.claim.model_copy(update={"status": self.status.model_copy(update=fields)})

    def update_metadata(
        self, labels: Mapping[str, str] | None = None, annotations: Mapping[str, str] | None = None
    ) -> None:
        meta = self.claim.metadata
        update: dict[str, object] = {}
        if labels is not None:
            update["labels"] = dict(labels)
        if annotations is not None:
            update["annotations"] = dict(annotations)
        self.claim = self.claim.model_copy(update={"metadata": meta.model_copy(update=update)})

    # --- what changed, for the writes ----------------------------------------------------------------
    def status_changed(self) -> bool:
        return self.claim.status != self.stored.status

    def label_changes(self) -> dict[str, str]:
        return _changes(self.stored.metadata.labels, self.claim.metadata.labels)

    def annotation_changes(self) -> dict[str, str]:
        return _changes(self.stored.metadata.annotations, self.claim.metadata.annotations)


def _changes(before: Mapping[str, str] | None, after: Mapping[str, str] | None) -> dict[str, str]:
    old = before or {}
    return {k: v for k, v in (after or {}).items() if old.get(k) != v}
