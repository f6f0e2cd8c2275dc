"""Lambda's SQS event source mapping, played over a real SQS API (moto over HTTP): receive a batch, hand it
to the handler as Lambda would, delete what succeeded, and make reported failures visible again."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]


def lambda_record(message: dict[str, Any], queue_arn: str, region: str) -> dict[str, Any]:
    """An SQS message from ReceiveMessage in the shape of a Lambda SQS event record."""
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": dict(message.get("Attributes", {})),
        "messageAttributes": {
            name: {
                "stringValue": value.get("StringValue"),
                "binaryValue": value.get("BinaryValue"),
                "stringListValues": [],
                "binaryListValues": [],
                "dataType": value["DataType"],
            }
            for name, value in message.get("MessageAttributes", {}).items()
        },
        "md5OfBody": message["MD5OfBody"],
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": region,
    }


@dataclass
class EventSourceMapping:
    sqs: Any
    queue_url: str
    handler: Handler
    context: Any
    batch_size: int = 10
    invocations: list[dict[str, Any]] = field(default_factory=list)

    @property
    def queue_arn(self) -> str:
        attributes = self.sqs.get_queue_attributes(QueueUrl=self.queue_url, AttributeNames=["QueueArn"])
        return str(attributes["Attributes"]["QueueArn"])

    def poll_once(self) -> dict[str, Any] | None:
        """One invocation with up to ``batch_size`` messages; None when the queue had none visible."""
        messages: list[dict[str, Any]] = []
        while len(messages) < self.batch_size:
            received = self.sqs.receive_message(
                QueueUrl=self.queue_url,
                MaxNumberOfMessages=min(10, self.batch_size - len(messages)),
                AttributeNames=["All"],
                MessageAttributeNames=["All"],
                WaitTimeSeconds=0,
            ).get("Messages", [])
            if not received:
                break
            messages += received
        if not messages:
            return None
        arn, region = self.queue_arn, self.queue_arn.split(":")[3]
        event = {"Records": [lambda_record(m, arn, region) for m in messages]}
        try:
            response = self.handler(event, self.context)
        except Exception as error:  # the whole batch goes back to the queue, as Lambda does
            response = {
                "error": repr(error),
                "batchItemFailures": [{"itemIdentifier": m["MessageId"]} for m in messages],
            }
        self.invocations.append(response)
        failed = {f["itemIdentifier"] for f in response.get("batchItemFailures", [])}
        for message in messages:
            if message["MessageId"] in failed:  # visible again now instead of after the visibility timeout
                self.sqs.change_message_visibility(
                    QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
                )
            else:
                self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"])
        return response

    def drain(self, max_invocations: int = 50) -> int:
        """Invoke until the queue is empty; the number of invocations."""
        for count in range(max_invocations):
            if self.poll_once() is None:
                return count
        raise AssertionError(f"queue not empty after {max_invocations} invocations: {self.invocations[-3:]}")
