"""SQS on the way to a dead-letter queue: the interruption queue's DLQ (the interruption controller's DeadLetters
port), and handing the provisioning queue's unreadable messages back at once, so that its redrive policy moves
them to their DLQ without holding up the FIFO message group for a whole visibility timeout."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Final

from botocore.exceptions import BotoCoreError, ClientError

from autoscaler.cloudprovider.errors import TransientCloudError

if TYPE_CHECKING:
    from autoscaler.events import SqsRecord
    from autoscaler.providers.aws.clients import AWSClients

log = logging.getLogger(__name__)

# SQS limits a message (body and attributes) to 256 KiB; a reason needs far less.
MAX_ATTRIBUTE_CHARS: Final = 1024


class SqsDeadLetters:
    """Sends a message body unchanged (a DLQ redrive can return it to its queue once fixed) with string
    message attributes saying why it was refused and where it came from."""

    def __init__(self, clients: AWSClients, queue_url: str) -> None:
        self._clients = clients
        self.queue_url = queue_url

    def send(self, body: str, attributes: Mapping[str, str]) -> None:
        try:
            self._clients.sqs.send_message(
                QueueUrl=self.queue_url,
                MessageBody=body,
                MessageAttributes={
                    key: {"DataType": "String", "StringValue": value[:MAX_ATTRIBUTE_CHARS]}
                    for key, value in attributes.items()
                    if value
                },
            )
        except (ClientError, BotoCoreError) as error:  # whatever the cause, the message must stay on its queue
            raise TransientCloudError(f"sending to the dead-letter queue {self.queue_url}: {error}") from error


class SqsVisibility:
    """Makes received messages visible again now (visibility timeout 0). Only a speed-up: a message it cannot
    release is logged and released by its visibility timeout anyway, so it never raises."""

    def __init__(self, clients: AWSClients) -> None:
        self._clients = clients

    def release(self, records: Sequence[SqsRecord]) -> None:
        for record in records:
            try:
                account, name = record.event_source_arn.split(":")[4:6]
                url = self._clients.sqs.get_queue_url(QueueName=name, QueueOwnerAWSAccountId=account)["QueueUrl"]
                self._clients.sqs.change_message_visibility(
                    QueueUrl=url, ReceiptHandle=record.receipt_handle, VisibilityTimeout=0
                )
            except Exception as error:  # botocore's client and connection errors alike
                log.warning("could not release message %s: %s", record.message_id, error)
