"""EC2 and AWS Health events as EventBridge puts them on the interruption queue, and SQS events as Lambda
receives them: for the embedded world, the samples in events/interruption/, tests and benchmarks."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from autoscaler_dev import harness

ACCOUNT = "111122223333"
REGION = "us-west-2"
QUEUE_ARN = f"arn:aws:sqs:{REGION}:{ACCOUNT}:demo-interruption"
_EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


def provider_id(instance_id: str, zone: str) -> str:
    return f"aws:///{zone}/{instance_id}"


def eventbridge_event(
    source: str,
    detail_type: str,
    detail: Mapping[str, Any],
    resources: Sequence[str],
    *,
    time: datetime | None,
    event_id: str | None,
) -> dict[str, Any]:
    when = time or _EPOCH
    return {
        "version": "0",
        "id": event_id or str(uuid.uuid4()),
        "detail-type": detail_type,
        "source": source,
        "account": ACCOUNT,
        "time": when.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": REGION,
        "resources": list(resources),
        "detail": dict(detail),
    }


def _instance_arn(instance_id: str) -> str:
    return f"arn:aws:ec2:{REGION}:{ACCOUNT}:instance/{instance_id}"


def spot_interruption_warning(
    instance_id: str, action: str = "terminate", *, time: datetime | None = None, event_id: str | None = None
) -> dict[str, Any]:
    return eventbridge_event(
        "aws.ec2",
        "EC2 Spot Instance Interruption Warning",
        {"instance-id": instance_id, "instance-action": action},
        [_instance_arn(instance_id)],
        time=time,
        event_id=event_id,
    )


def capacity_reservation_interruption_warning(
    instance_id: str, zone_id: str = "usw2-az1", *, time: datetime | None = None, event_id: str | None = None
) -> dict[str, Any]:
    """The owner of an interruptible reservation reclaims it: the instance is terminated two minutes later."""
    when = time or _EPOCH
    return eventbridge_event(
        "aws.ec2",
        "EC2 Capacity Reservation Instance Interruption Warning",
        {
            "instance-id": instance_id,
            "instance-action": "terminate",
            "instance-termination-time": (when + timedelta(minutes=2)).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "azId": zone_id,
        },
        [_instance_arn(instance_id)],
        time=time,
        event_id=event_id,
    )


def rebalance_recommendation(
    instance_id: str, *, time: datetime | None = None, event_id: str | None = None
) -> dict[str, Any]:
    return eventbridge_event(
        "aws.ec2",
        "EC2 Instance Rebalance Recommendation",
        {"instance-id": instance_id},
        [_instance_arn(instance_id)],
        time=time,
        event_id=event_id,
    )


def state_change(
    instance_id: str, state: str, *, time: datetime | None = None, event_id: str | None = None
) -> dict[str, Any]:
    return eventbridge_event(
        "aws.ec2",
        "EC2 Instance State-change Notification",
        {"instance-id": instance_id, "state": state},
        [_instance_arn(instance_id)],
        time=time,
        event_id=event_id,
    )


def scheduled_change(
    instance_ids: Iterable[str],
    *,
    event_type_code: str = "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED",
    service: str = "EC2",
    category: str = "scheduledChange",
    time: datetime | None = None,
    event_id: str | None = None,
) -> dict[str, Any]:
    ids = list(instance_ids)
    suffix = hashlib.sha1("".join(ids).encode()).hexdigest()[:12]
    detail = {
        "eventArn": f"arn:aws:health:{REGION}::event/{service}/{event_type_code}/{event_type_code}_{suffix}",
        "service": service,
        "eventScopeCode": "ACCOUNT_SPECIFIC",
        "communicationId": f"{suffix}-1",
        "lastUpdatedTime": "Thu, 01 Jan 2026 00:00:00 GMT",
        "eventRegion": REGION,
        "eventTypeCode": event_type_code,
        "eventTypeCategory": category,
        "startTime": "Fri, 09 Jan 2026 08:00:00 GMT",
        "endTime": "Fri, 09 Jan 2026 10:00:00 GMT",
        "eventDescription": [
            {"language": "en_US", "latestDescription": "The instance is scheduled for retirement."},
        ],
        "affectedEntities": [{"entityValue": i, "status": "PENDING"} for i in ids],
        "affectedAccount": ACCOUNT,
        "page": "1",
        "totalPages": "1",
    }
    return eventbridge_event("aws.health", "AWS Health Event", detail, ids, time=time, event_id=event_id)


def sqs_record(
    body: Mapping[str, Any] | str,
    *,
    message_id: str | None = None,
    sent_at: datetime | None = None,
    receive_count: int = 1,
    queue_arn: str = QUEUE_ARN,
) -> dict[str, Any]:
    """One record of an SQS event as Lambda's event source mapping delivers it: a message SQS would have received
    (sent at ``sent_at``, received ``receive_count`` times), handed over by the harness."""
    text = body if isinstance(body, str) else json.dumps(body)
    sent_ms = str(int((sent_at or _EPOCH).timestamp() * 1000))
    received = {
        "MessageId": message_id or str(uuid.uuid4()),
        "ReceiptHandle": "AQEB" + hashlib.sha1(text.encode()).hexdigest(),
        "Body": text,
        "Attributes": {
            "ApproximateReceiveCount": str(receive_count),
            "SentTimestamp": sent_ms,
            "SenderId": "AIDAIENQZJOLO23YVJ4VO",
            "ApproximateFirstReceiveTimestamp": sent_ms,
        },
        "MD5OfBody": hashlib.md5(text.encode()).hexdigest(),  # SQS computes the same checksum
    }
    return harness.sqs_record(received, queue_arn)


def sqs_event(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    return {"Records": list(records)}
