"""What to do about each of our instances named in a batch: pure decisions, no I/O.

Messages are grouped by instance first, so duplicates (SQS redelivery, EventBridge retries, the same
instance in several messages, or a warning and a state change for one instance) make one plan and so
one action. Karpenter v1's semantics: a spot interruption warning, an interruptible capacity reservation's
interruption warning, a scheduled change, and a state change to stopping/stopped/shutting-down/terminated all cordon
the node and delete its NodeClaim (which starts the termination flow); a spot warning also marks its offering
unavailable; a rebalance
recommendation is an event only, unless the NodePool opted in to proactive replacement.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from typing import Final, Literal

from autoscaler.apis.v1 import labels as wk
from autoscaler.cloudprovider.errors import OfferingKey
from autoscaler.controllers.interruption.index import ClusterIndex, IndexedInstance
from autoscaler.controllers.interruption.messages import InterruptionMessage, MessageKind
from autoscaler.controllers.rebalance.recommendation import (
    RebalancePolicy,
    rebalance_recommended_at,
    recommendation_annotation,
)


class Action(StrEnum):
    CORDON_AND_DRAIN = "CordonAndDrain"
    REQUEST_REPLACEMENT = "RequestReplacement"
    NOTIFY = "Notify"
    NONE = "NoAction"


DRAINING_KINDS: Final = frozenset(
    {
        MessageKind.SPOT_INTERRUPTION,
        MessageKind.CAPACITY_RESERVATION_INTERRUPTION,
        MessageKind.SCHEDULED_CHANGE,
        MessageKind.INSTANCE_STOPPED,
        MessageKind.INSTANCE_TERMINATED,
    }
)
# The kind a plan is filed under when one instance got several kinds of message, most urgent first.
_PRIORITY: Final = (
    MessageKind.SPOT_INTERRUPTION,
    MessageKind.CAPACITY_RESERVATION_INTERRUPTION,
    MessageKind.INSTANCE_TERMINATED,
    MessageKind.INSTANCE_STOPPED,
    MessageKind.SCHEDULED_CHANGE,
    MessageKind.REBALANCE_RECOMMENDATION,
)
EVENT_REASONS: Final[Mapping[MessageKind, str]] = {
    MessageKind.SPOT_INTERRUPTION: "SpotInterrupted",
    MessageKind.CAPACITY_RESERVATION_INTERRUPTION: "CapacityReservationInstanceInterrupted",
    MessageKind.REBALANCE_RECOMMENDATION: "RebalanceRecommendation",
    MessageKind.INSTANCE_STOPPED: "InstanceStopping",
    MessageKind.INSTANCE_TERMINATED: "InstanceTerminating",
    MessageKind.SCHEDULED_CHANGE: "ScheduledChange",
}
NOT_OURS: Final = "instance is not one of this cluster's NodeClaims"


@dataclass(frozen=True)
class Notice:
    """A Kubernetes event to record on the NodeClaim and on its Node."""

    reason: str
    message: str
    type: Literal["Normal", "Warning"]
    action: Action


@dataclass(frozen=True)
class InstancePlan:
    """Everything one batch does about one instance; the writes are skipped when already done."""

    instance: IndexedInstance
    message_ids: tuple[str, ...]
    kind: MessageKind
    action: Action
    cordon: bool = False
    delete: bool = False
    annotations: Mapping[str, str | None] | None = None
    unavailable: OfferingKey | None = None
    notices: tuple[Notice, ...] = ()
    note: str = ""  # why nothing is written, when nothing is

    @property
    def writes(self) -> bool:
        return self.cordon or self.delete or self.annotations is not None or bool(self.notices)


@dataclass(frozen=True)
class BatchPlan:
    plans: tuple[InstancePlan, ...]
    # Messages that named none of our instances, with the reason (a counted no-op).
    unmatched: Mapping[str, str] = field(default_factory=dict)


def _notice(kind: MessageKind, note: str, action: Action) -> Notice:
    text = {
        MessageKind.SPOT_INTERRUPTION: f"Spot interruption warning: EC2 will {note or 'reclaim'} the instance",
        MessageKind.CAPACITY_RESERVATION_INTERRUPTION: (
            f"Capacity Reservation interruption warning: EC2 will {note or 'reclaim'} the instance"
        ),
        MessageKind.INSTANCE_STOPPED: f"Instance is {note or 'stopping'}",
        MessageKind.INSTANCE_TERMINATED: f"Instance is {note or 'terminating'}",
        MessageKind.SCHEDULED_CHANGE: f"AWS Health scheduled change {note} affects the instance".replace("  ", " "),
        MessageKind.REBALANCE_RECOMMENDATION: "EC2 recommends rebalancing: the spot instance is at elevated risk"
        + (
            " of interruption; a replacement is requested"
            if action is Action.REQUEST_REPLACEMENT
            else " of interruption"
        ),
    }[kind]
    severity: Literal["Normal", "Warning"] = "Normal" if kind is MessageKind.REBALANCE_RECOMMENDATION else "Warning"
    return Notice(EVENT_REASONS[kind], text, severity, action)


def plan_batch(
    messages: Sequence[tuple[str, InterruptionMessage]],
    index: ClusterIndex,
    policy_of: Callable[[str], RebalancePolicy],
) -> BatchPlan:
    """One plan per instance of ours named in ``messages`` (pairs of SQS message id and message).
    ``policy_of`` gives a NodePool's rebalance policy by name; it is only called for rebalance plans."""
    by_instance: dict[str, list[tuple[str, InterruptionMessage]]] = {}
    matched: set[str] = set()
    for message_id, message in messages:
        for instance_id in message.instance_ids:
            if index.get(instance_id) is not None:
                by_instance.setdefault(instance_id, []).append((message_id, message))
                matched.add(message_id)
    marked: set[OfferingKey] = set()
    plans = []
    for instance_id, related in by_instance.items():
        entry = index.get(instance_id)
        assert entry is not None
        plan = _plan_instance(entry, related, policy_of)
        if plan.unavailable in marked:  # one write per offering per batch
            plan = replace(plan, unavailable=None)
        elif plan.unavailable is not None:
            marked.add(plan.unavailable)
        plans.append(plan)
    unmatched = {message_id: NOT_OURS for message_id, _ in messages if message_id not in matched}
    return BatchPlan(tuple(plans), unmatched)


def _plan_instance(
    entry: IndexedInstance,
    related: Sequence[tuple[str, InterruptionMessage]],
    policy_of: Callable[[str], RebalancePolicy],
) -> InstancePlan:
    message_ids = tuple(dict.fromkeys(message_id for message_id, _ in related))
    notes: dict[MessageKind, str] = {}
    for _, message in sorted(related, key=lambda pair: pair[1].event_time):
        notes.setdefault(message.kind, message.note)
    kind = next(k for k in _PRIORITY if k in notes)
    if kind in DRAINING_KINDS:
        return _plan_drain(entry, message_ids, kind, notes)
    recommended_at = min(m.event_time for _, m in related)
    return _plan_rebalance(entry, message_ids, recommended_at, policy_of)


def _plan_drain(
    entry: IndexedInstance, message_ids: tuple[str, ...], kind: MessageKind, notes: Mapping[MessageKind, str]
) -> InstancePlan:
    unavailable = None
    if MessageKind.SPOT_INTERRUPTION in notes:
        instance_type, zone = entry.labels.get(wk.LABEL_INSTANCE_TYPE), entry.labels.get(wk.LABEL_ZONE)
        if instance_type and zone:
            unavailable = OfferingKey(instance_type, zone, wk.CAPACITY_TYPE_SPOT)
    cordon = entry.node is not None and not entry.cordoned
    delete = not entry.deleting
    if not (cordon or delete):
        return InstancePlan(
            entry, message_ids, kind, Action.NONE, unavailable=unavailable, note="already cordoned and being deleted"
        )
    notices = tuple(
        _notice(k, notes[k], Action.CORDON_AND_DRAIN) for k in _PRIORITY if k in notes and k in DRAINING_KINDS
    )
    return InstancePlan(
        entry,
        message_ids,
        kind,
        Action.CORDON_AND_DRAIN,
        cordon=cordon,
        delete=delete,
        unavailable=unavailable,
        notices=notices,
    )


def _plan_rebalance(
    entry: IndexedInstance,
    message_ids: tuple[str, ...],
    recommended_at: datetime,
    policy_of: Callable[[str], RebalancePolicy],
) -> InstancePlan:
    kind = MessageKind.REBALANCE_RECOMMENDATION
    if entry.deleting:
        return InstancePlan(entry, message_ids, kind, Action.NONE, note="NodeClaim is already being deleted")
    policy = policy_of(entry.labels.get(wk.LABEL_NODEPOOL, ""))
    if policy is RebalancePolicy.NOTIFY:
        return InstancePlan(entry, message_ids, kind, Action.NOTIFY, notices=(_notice(kind, "", Action.NOTIFY),))
    if rebalance_recommended_at(entry.nodeclaim) is not None:
        return InstancePlan(entry, message_ids, kind, Action.NONE, note="replacement already requested")
    return InstancePlan(
        entry,
        message_ids,
        kind,
        Action.REQUEST_REPLACEMENT,
        annotations=recommendation_annotation(recommended_at),
        notices=(_notice(kind, "", Action.REQUEST_REPLACEMENT),),
    )
