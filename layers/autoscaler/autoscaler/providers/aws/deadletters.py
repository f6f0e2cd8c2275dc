"""The interruption queue's dead-letter queue (SQS), as the interruption controller's DeadLetters port."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

from botocore.exceptions import BotoCoreError, ClientError

from autoscaler.cloudprovider.errors import TransientCloudError

if TYPE_CHECKING:
    from autoscaler.providers.aws.clients import AWSClients

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
