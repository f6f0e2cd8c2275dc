"""The event contract: what reaches the functions, as pydantic models. Pure (pydantic only).

- :class:`EventBridgeEvent`: the envelope EventBridge delivers to targets, generic in its ``detail``.
- :class:`ScheduledEvent`: what an EventBridge schedule sends (every event trigger has such a sweep).
- :class:`ClusterEvent`: what the forwarder puts on the cluster bus (docs/events.md), ``detail`` version "1".
  The forwarder builds :class:`ClusterEventDetail` and sends its :meth:`~ClusterEventDetail.wire` form; the
  functions parse the whole event. :class:`NodeClassEvent` is the part of it the nodeclass function is sent.
- :class:`SqsRecord`: one message of a batch as Lambda's SQS event source hands it over (the provisioning
  queue's bodies are EventBridge events, the interruption queue's are EC2 and AWS Health events).
- :data:`ProvisionerRequest` and :func:`provisioning_trigger`: which of these ask the provisioner for a pass.

Only the fields a function reads are required, and unknown fields are ignored: senders add fields over time
without bumping a version (the forwarder's ``detail.version`` changes only with a breaking change).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Final, Generic, Literal, TypeVar, get_args

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    field_serializer,
)

from autoscaler.routing import NODECLASS_DETAIL_TYPES

ForwarderSource = Literal["serverless-karpenter.forwarder"]
FORWARDER_SOURCE: Final[str] = get_args(ForwarderSource)[0]  # EventBridge's ``source`` of every cluster event
SCHEMA_VERSION: Final = "1"  # the forwarder's ``detail.version``
WATCHED_KINDS: Final = ("Pod", "Node", "NodeClaim", "NodePool", "EC2NodeClass")
LIFECYCLE: Final = ("Created", "Updated", "Deleting", "Deleted")
Change = Literal["Unschedulable", "Capacity Freed", "Created", "Updated", "Deleting", "Deleted"]
# Every detail-type the forwarder sends, "<Kind> <Change>" (EventBridge rules match on these).
DETAIL_TYPES: Final = (
    "Pod Unschedulable",
    "Pod Capacity Freed",
    *(f"{kind} {change}" for kind in WATCHED_KINDS[1:] for change in LIFECYCLE),
)
OBSERVED_AT_FORMAT: Final = "%Y-%m-%dT%H:%M:%S.%fZ"  # RFC 3339, microseconds, UTC


class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)


DetailT = TypeVar("DetailT")


class EventBridgeEvent(_Wire, Generic[DetailT]):
    """The envelope of every EventBridge event, as targets receive it."""

    version: str
    id: str
    detail_type: str = Field(alias="detail-type")
    source: str
    account: str
    time: AwareDatetime  # aware, as EventBridge writes it (whole seconds, UTC)
    region: str
    resources: list[str] = Field(default_factory=list)
    detail: DetailT

    @property
    def observed_at(self) -> datetime | None:
        """When the sender observed what the event reports, when it says (the forwarder does)."""
        return None


class ScheduledEvent(EventBridgeEvent[dict[str, Any]]):
    """What an EventBridge schedule invokes a function (or fills the provisioning queue) with."""

    source: Literal["aws.events"]
    detail_type: Literal["Scheduled Event"] = Field(alias="detail-type")


class ObjectReference(_Wire):
    """Which object changed, and the version of it the forwarder saw."""

    api_version: str = Field(alias="apiVersion")
    kind: str
    name: str
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = Field(default=None, alias="resourceVersion")
    deletion_timestamp: str | None = Field(default=None, alias="deletionTimestamp")
    labels: dict[str, str] | None = None  # the few labels rules filter on (docs/events.md)


class ClusterEventDetail(_Wire):
    """The forwarder's ``detail``: it names the object and says what changed, never the whole object."""

    version: Literal["1"]
    cluster: str
    change: Change
    observed_at: AwareDatetime = Field(alias="observedAt")
    object: ObjectReference
    node_name: str | None = Field(default=None, alias="nodeName")
    provider_id: str | None = Field(default=None, alias="providerID")
    node_pool: str | None = Field(default=None, alias="nodePool")
    message: str | None = None  # Pod Unschedulable: the scheduler's PodScheduled message
    reason: str | None = None  # Pod Capacity Freed: Deleted, Succeeded or Failed

    @field_serializer("observed_at")
    def _observed_at(self, value: datetime) -> str:
        return value.astimezone(UTC).strftime(OBSERVED_AT_FORMAT)  # always six digits of microseconds

    def wire(self) -> dict[str, Any]:
        """The JSON document the forwarder sends: camelCase, absent values omitted rather than null."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


def _one_of(allowed: tuple[str, ...], what: str) -> AfterValidator:
    def check(value: str) -> str:
        if value not in allowed:
            raise ValueError(f"not {what}: {value[:64]!r}")
        return value

    return AfterValidator(check)


class ClusterEvent(EventBridgeEvent[ClusterEventDetail]):
    """A change the forwarder saw, as it reaches a rule's target."""

    source: ForwarderSource
    detail_type: Annotated[str, _one_of(DETAIL_TYPES, "a detail-type the forwarder sends")] = Field(alias="detail-type")

    @property
    def observed_at(self) -> datetime:
        return self.detail.observed_at


class NodeClassEvent(ClusterEvent):
    """An EC2NodeClass change, as the nodeclass function is sent it (``routing.NODECLASS_DETAIL_TYPES``)."""

    detail_type: Annotated[str, _one_of(NODECLASS_DETAIL_TYPES, "an EC2NodeClass change")] = Field(alias="detail-type")


class SqsAttributes(_Wire):
    approximate_receive_count: int = Field(default=1, alias="ApproximateReceiveCount")
    sent_timestamp: AwareDatetime | None = Field(default=None, alias="SentTimestamp")  # epoch milliseconds


class SqsRecord(_Wire):
    """One message of an SQS batch (the fields the functions read)."""

    message_id: str = Field(alias="messageId")
    receipt_handle: str = Field(alias="receiptHandle")
    body: str
    attributes: SqsAttributes = Field(default_factory=SqsAttributes)
    event_source_arn: str = Field(alias="eventSourceARN")


class SqsBatch(_Wire):
    """A batch from Lambda's SQS event source; each record is read on its own, so one bad record fails alone."""

    records: list[Any] = Field(alias="Records")


# What the provisioner is invoked with: a batch of its queue, or (by hand, or by a test) one EventBridge event,
# which is a trigger (any cluster event, or the sweep) or another event that asks for no pass.
ProvisionerRequest = Annotated[
    SqsBatch | ClusterEvent | ScheduledEvent | EventBridgeEvent[dict[str, Any]], Field(union_mode="left_to_right")
]
_TRIGGER: TypeAdapter[ClusterEvent | ScheduledEvent] = TypeAdapter(ClusterEvent | ScheduledEvent)


def provisioning_trigger(event: Any) -> ClusterEvent | ScheduledEvent | None:
    """``event`` as a trigger of a provisioning pass (any cluster event, or the sweep), or None for another
    EventBridge event. Raises ValidationError for anything that is not an EventBridge event at all."""
    EventBridgeEvent[dict[str, Any]].model_validate(event)
    try:
        return _TRIGGER.validate_python(event)
    except ValidationError:
        return None
