"""Leases in the state table (DynamoDB): one item per lease, ``id = "lease#<name>"``, the holder, and
``expiration`` (epoch seconds, the table's TTL attribute). Taking one is a single conditional write, so two
passes racing for it cannot both win; an expired lease is taken over by the same write, because DynamoDB's
TTL deletion lags by up to days."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from botocore.exceptions import ClientError

from autoscaler.clock import utc_now
from autoscaler.providers.aws.clients import error_code, transient_errors
from autoscaler.settings import LEASE_PREFIX, STATE_TABLE_KEY, STATE_TABLE_TTL

if TYPE_CHECKING:
    from autoscaler.providers.aws.clients import AWSClients

CONDITION_FAILED = "ConditionalCheckFailedException"


class DynamoDBLeases:
    def __init__(self, clients: AWSClients, table_name: str, clock: Callable[[], datetime] = utc_now) -> None:
        if not table_name:
            raise ValueError("STATE_TABLE_NAME is required for leases")
        self._clients, self._table, self._clock = clients, table_name, clock

    def acquire(self, name: str, holder: str, ttl: timedelta) -> bool:
        now = self._clock()
        try:
            with transient_errors(f"taking lease {name}"):
                self._clients.dynamodb.put_item(
                    TableName=self._table,
                    Item={
                        STATE_TABLE_KEY: {"S": LEASE_PREFIX + name},
                        STATE_TABLE_TTL: {"N": str(int((now + ttl).timestamp()))},
                        "holder": {"S": holder},
                    },
                    ConditionExpression="attribute_not_exists(#pk) OR #ttl <= :now OR holder = :holder",
                    ExpressionAttributeNames={"#pk": STATE_TABLE_KEY, "#ttl": STATE_TABLE_TTL},
                    ExpressionAttributeValues={
                        ":now": {"N": str(int(now.timestamp()))},
                        ":holder": {"S": holder},
                    },
                )
        except ClientError as error:
            if error_code(error) == CONDITION_FAILED:
                return False
            raise
        return True

    def release(self, name: str, holder: str) -> None:
        try:
            with transient_errors(f"releasing lease {name}"):
                self._clients.dynamodb.delete_item(
                    TableName=self._table,
                    Key={STATE_TABLE_KEY: {"S": LEASE_PREFIX + name}},
                    ConditionExpression="holder = :holder",
                    ExpressionAttributeValues={":holder": {"S": holder}},
                )
        except ClientError as error:
            if error_code(error) != CONDITION_FAILED:
                raise
