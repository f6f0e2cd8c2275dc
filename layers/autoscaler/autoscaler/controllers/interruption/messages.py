"""The EC2 and AWS Health events the interruption queue carries, as EventBridge delivers them to SQS.

The envelope is the event contract's (``autoscaler.events.EventBridgeEvent``), with a detail model per payload,
in the style of Powertools' parser models but free of Powertools so that the pure core can use them. Only the
fields we act on are required; AWS adds fields over time, so unknown ones are ignored rather than rejected.

:func:`parse_body` turns an SQS message body into exactly one of: an :class:`InterruptionMessage` to act
on, an :class:`Ignored` message (a counted no-op: an event we do not handle, or a state we do not act on),
or a :class:`Malformed` one (not JSON, not an EventBridge event, or a payload of the wrong shape), which
carries a short code and a readable reason for the dead-letter queue.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Final

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from autoscaler.events import EventBridgeEvent

INSTANCE_ID_PATTERN: Final = r"^i-[0-9a-f]{8,17}$"
_INSTANCE_ID = re.compile(INSTANCE_ID_PATTERN)
InstanceId = Annotated[str, Field(pattern=INSTANCE_ID_PATTERN)]

SOURCE_EC2: Final = "aws.ec2"
SOURCE_HEALTH: Final = "aws.health"
SPOT_INTERRUPTION_WARNING: Final = "EC2 Spot Instance Interruption Warning"
REBALANCE_RECOMMENDATION: Final = "EC2 Instance Rebalance Recommendation"
STATE_CHANGE_NOTIFICATION: Final = "EC2 Instance State-change Notification"
CAPACITY_RESERVATION_INTERRUPTION_WARNING: Final = "EC2 Capacity Reservation Instance Interruption Warning"
HEALTH_EVENT: Final = "AWS Health Event"

# Instance states that end the node (Karpenter acts on these four and ignores pending/running).
STOPPING_STATES: Final = frozenset({"stopping", "stopped"})
TERMINATING_STATES: Final = frozenset({"shutting-down", "terminated"})
HEALTH_SERVICE_EC2: Final = "EC2"
HEALTH_SCHEDULED_CHANGE: Final = "scheduledChange"


class MessageKind(StrEnum):
    """What a message says about its instances; the values are Karpenter's ``message_type`` metric labels."""

    SPOT_INTERRUPTION = "spot_interrupted"
    REBALANCE_RECOMMENDATION = "rebalance_recommendation"
    SCHEDULED_CHANGE = "scheduled_change"
    INSTANCE_STOPPED = "instance_stopped"
    INSTANCE_TERMINATED = "instance_terminated"
    CAPACITY_RESERVATION_INTERRUPTION = "capacity_reservation_interrupted"
    NO_OP = "no_op"


class MalformedCode(StrEnum):
    NOT_JSON = "NotJson"
    NOT_AN_EVENT = "NotAnEventBridgeEvent"
    INVALID_DETAIL = "InvalidDetail"


# --- Wire models ----------------------------------------------------------------------------------
class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)


class SpotInterruptionWarning(_Wire):
    """``aws.ec2`` / "EC2 Spot Instance Interruption Warning": two minutes' notice."""

    instance_id: InstanceId = Field(alias="instance-id")
    instance_action: str = Field(alias="instance-action")  # terminate, stop or hibernate


class CapacityReservationInterruptionWarning(_Wire):
    """``aws.ec2`` / "EC2 Capacity Reservation Instance Interruption Warning": the owner of an interruptible
    capacity reservation reclaims it, and EC2 terminates the instance in two minutes."""

    instance_id: InstanceId = Field(alias="instance-id")
    instance_action: str = Field(default="terminate", alias="instance-action")


class RebalanceRecommendation(_Wire):
    """``aws.ec2`` / "EC2 Instance Rebalance Recommendation": the spot instance is at elevated risk."""

    instance_id: InstanceId = Field(alias="instance-id")


class InstanceStateChange(_Wire):
    """``aws.ec2`` / "EC2 Instance State-change Notification"."""

    instance_id: InstanceId = Field(alias="instance-id")
    state: str


class HealthAffectedEntity(_Wire):
    entity_value: str = Field(alias="entityValue")


class HealthEventDescription(_Wire):
    language: str | None = None
    latest_description: str | None = Field(default=None, alias="latestDescription")


class HealthEvent(_Wire):
    """``aws.health`` / "AWS Health Event"; for EC2 scheduled changes the entities are instance ids."""

    event_arn: str = Field(alias="eventArn")
    service: str
    event_type_code: str = Field(alias="eventTypeCode")
    event_type_category: str = Field(alias="eventTypeCategory")
    start_time: str | None = Field(default=None, alias="startTime")
    end_time: str | None = Field(default=None, alias="endTime")
    event_description: list[HealthEventDescription] = Field(default_factory=list, alias="eventDescription")
    affected_entities: list[HealthAffectedEntity] = Field(default_factory=list, alias="affectedEntities")


_DETAIL_MODELS: Final[Mapping[tuple[str, str], type[_Wire]]] = {
    (SOURCE_EC2, SPOT_INTERRUPTION_WARNING): SpotInterruptionWarning,
    (SOURCE_EC2, REBALANCE_RECOMMENDATION): RebalanceRecommendation,
    (SOURCE_EC2, STATE_CHANGE_NOTIFICATION): InstanceStateChange,
    (SOURCE_EC2, CAPACITY_RESERVATION_INTERRUPTION_WARNING): CapacityReservationInterruptionWarning,
    (SOURCE_HEALTH, HEALTH_EVENT): HealthEvent,
}
SUPPORTED_VERSION: Final = "0"


# --- Parse results --------------------------------------------------------------------------------
@dataclass(frozen=True)
class InterruptionMessage:
    """A message we may act on: its kind, the instances it names, and a short note for events and logs."""

    kind: MessageKind
    instance_ids: tuple[str, ...]
    event_id: str
    event_time: datetime
    note: str = ""


@dataclass(frozen=True)
class Ignored:
    """A well-formed message we do not act on (a counted no-op)."""

    reason: str
    kind: MessageKind = MessageKind.NO_OP


@dataclass(frozen=True)
class Malformed:
    """A message that can never be handled; it goes to the dead-letter queue with ``reason``."""

    code: MalformedCode
    detail: str

    @property
    def reason(self) -> str:
        return f"{self.code}: {self.detail}"


Parsed = InterruptionMessage | Ignored | Malformed


def _summarize(error: ValidationError) -> str:
    """Pydantic's errors as one line: ``detail.instance-id: Field required; time: Input should be ...``."""
    parts = []
    for item in error.errors(include_url=False)[:5]:
        location = ".".join(str(part) for part in item["loc"]) or "(root)"
        parts.append(f"{location}: {item['msg']}")
    return "; ".join(parts)


def parse_body(body: str) -> Parsed:
    """Classify one SQS message body; never raises."""
    try:
        document: Any = json.loads(body)
    except (ValueError, TypeError, RecursionError) as error:  # RecursionError: nested deeper than Python recurses
        return Malformed(MalformedCode.NOT_JSON, f"body is not JSON ({error})")
    try:
        envelope = EventBridgeEvent[dict[str, Any]].model_validate(document)
    except ValidationError as error:
        return Malformed(MalformedCode.NOT_AN_EVENT, _summarize(error))
    model = _DETAIL_MODELS.get((envelope.source, envelope.detail_type))
    if model is None:
        return Ignored(f"unhandled event {envelope.source} / {envelope.detail_type!r}")
    if envelope.version != SUPPORTED_VERSION:
        return Ignored(f"unsupported EventBridge version {envelope.version!r} of {envelope.detail_type!r}")
    try:
        detail = model.model_validate(envelope.detail)
    except ValidationError as error:
        return Malformed(MalformedCode.INVALID_DETAIL, f"{envelope.detail_type}: {_summarize(error)}")
    return _classify(envelope, detail)


def _classify(envelope: EventBridgeEvent[dict[str, Any]], detail: _Wire) -> InterruptionMessage | Ignored:
    def message(kind: MessageKind, instance_ids: tuple[str, ...], note: str) -> InterruptionMessage:
        return InterruptionMessage(kind, instance_ids, envelope.id, envelope.time, note)

    match detail:
        case SpotInterruptionWarning():
            return message(MessageKind.SPOT_INTERRUPTION, (detail.instance_id,), detail.instance_action)
        case CapacityReservationInterruptionWarning():
            return message(MessageKind.CAPACITY_RESERVATION_INTERRUPTION, (detail.instance_id,), detail.instance_action)
        case RebalanceRecommendation():
            return message(MessageKind.REBALANCE_RECOMMENDATION, (detail.instance_id,), "")
        case InstanceStateChange():
            state = detail.state.lower()
            if state in STOPPING_STATES:
                return message(MessageKind.INSTANCE_STOPPED, (detail.instance_id,), state)
            if state in TERMINATING_STATES:
                return message(MessageKind.INSTANCE_TERMINATED, (detail.instance_id,), state)
            return Ignored(f"instance state {detail.state!r} needs no action")
        case HealthEvent():
            return _classify_health(envelope, detail)
    raise AssertionError(f"no classification for {type(detail).__name__}")  # pragma: no cover


def _classify_health(envelope: EventBridgeEvent[dict[str, Any]], detail: HealthEvent) -> InterruptionMessage | Ignored:
    if detail.service != HEALTH_SERVICE_EC2 or detail.event_type_category != HEALTH_SCHEDULED_CHANGE:
        return Ignored(f"AWS Health {detail.service} {detail.event_type_category} events need no action")
    # Scheduled changes also name dedicated hosts and other entities: only instances concern nodes.
    instance_ids = tuple(
        dict.fromkeys(e.entity_value for e in detail.affected_entities if is_instance_id(e.entity_value))
    )
    if not instance_ids:
        return Ignored(f"AWS Health {detail.event_type_code} names no EC2 instance")
    return InterruptionMessage(
        MessageKind.SCHEDULED_CHANGE, instance_ids, envelope.id, envelope.time, detail.event_type_code
    )


def is_instance_id(value: str) -> bool:
    return bool(_INSTANCE_ID.match(value))
