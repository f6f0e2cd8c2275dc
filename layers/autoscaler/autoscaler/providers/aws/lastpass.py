"""The provisioner's last completed pass, in the state table: ``id = LAST_PASS_ID``, ``started_at`` (epoch
seconds with microseconds) and the TTL attribute. Writes are conditional, so a late writer never moves the
time backwards. Failures are CloudProviderError (TransientCloudError for throttling): the caller then runs a
pass anyway, since skipping one is only a saving."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from botocore.exceptions import ClientError

from autoscaler.clock import utc_now
from autoscaler.cloudprovider.errors import CloudProviderError
from autoscaler.providers.aws.clients import error_code, error_message, transient_errors
from autoscaler.settings import LAST_PASS_ID, LAST_PASS_TTL_SECONDS, STATE_TABLE_KEY, STATE_TABLE_TTL

if TYPE_CHECKING:
    from autoscaler.providers.aws.clients import AWSClients


class DynamoDBLastPass:
    def __init__(self, clients: AWSClients, table_name: str) -> None:
        if not table_name:
            raise ValueError("STATE_TABLE_NAME is required for the provisioner's record of its last pass")
        self._clients, self._table = clients, table_name

    def started_at(self) -> datetime | None:
        now = utc_now().timestamp()
        try:
            with transient_errors("reading the last pass"):
                item = self._clients.dynamodb.get_item(
                    TableName=self._table, Key={STATE_TABLE_KEY: {"S": LAST_PASS_ID}}, ConsistentRead=True
                ).get("Item")
        except ClientError as error:
            raise CloudProviderError(f"reading the last pass: {error_code(error)}: {error_message(error)}") from error
        if not item or float(item[STATE_TABLE_TTL]["N"]) <= now:  # TTL deletion lags: filter ourselves
            return None
        return datetime.fromtimestamp(float(item["started_at"]["N"]), UTC)

    def record(self, started_at: datetime) -> None:
        started = f"{started_at.timestamp():.6f}"
        expires = str(int(started_at.timestamp()) + LAST_PASS_TTL_SECONDS)
        try:
            with transient_errors("recording the last pass"):
                self._clients.dynamodb.put_item(
                    TableName=self._table,
                    Item={
                        STATE_TABLE_KEY: {"S": LAST_PASS_ID},
                        "started_at": {"N": started},
                        STATE_TABLE_TTL: {"N": expires},
                    },
                    ConditionExpression="attribute_not_exists(#id) OR started_at < :started",
                    ExpressionAttributeNames={"#id": STATE_TABLE_KEY},
                    ExpressionAttributeValues={":started": {"N": started}},
                )
        except ClientError as error:
            if error_code(error) != "ConditionalCheckFailedException":  # that is: a newer pass is recorded
                message = f"recording the last pass: {error_code(error)}: {error_message(error)}"
                raise CloudProviderError(message) from error
