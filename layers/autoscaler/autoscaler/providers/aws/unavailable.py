"""Unavailable offerings shared by every function through the state table (DynamoDB), with TTL.

One item per offering: ``id = "unavailable#<type>#<zone>#<capacity type>"`` (``#<placement group id>`` after it
when the mark is scoped to a placement group), ``expiration`` (epoch
seconds; the table's TTL attribute, so DynamoDB deletes old items) and the reason. Reads filter on
``expiration`` because DynamoDB's TTL deletion lags by up to days.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from autoscaler.clock import utc_now
from autoscaler.cloudprovider.errors import OfferingKey
from autoscaler.cloudprovider.port import UNAVAILABLE_OFFERING_TTL
from autoscaler.providers.aws.cache import TTLCache
from autoscaler.providers.aws.clients import transient_errors
from autoscaler.settings import STATE_TABLE_KEY, STATE_TABLE_TTL

if TYPE_CHECKING:
    from autoscaler.providers.aws.clients import AWSClients

PREFIX = "unavailable#"
PARTITION_KEY = STATE_TABLE_KEY
TTL_ATTRIBUTE = STATE_TABLE_TTL


class DynamoDBUnavailableOfferings:
    """``read_ttl`` bounds how stale one function's view of other functions' marks may be (a batch of
    launches reads once, not once per NodeClaim); its own marks are seen at once."""

    def __init__(
        self,
        clients: AWSClients,
        table_name: str,
        clock: Callable[[], datetime] = utc_now,
        read_ttl: timedelta = timedelta(seconds=5),
    ) -> None:
        if not table_name:
            raise ValueError("STATE_TABLE_NAME is required for the shared cache of unavailable offerings")
        self._clients, self._table, self._clock = clients, table_name, clock
        self._read: TTLCache[frozenset[OfferingKey]] = TTLCache(read_ttl, clock)

    def mark_unavailable(self, offering: OfferingKey, reason: str, ttl: timedelta = UNAVAILABLE_OFFERING_TTL) -> None:
        key = f"{PREFIX}{offering.instance_type}#{offering.zone}#{offering.capacity_type}"
        if offering.placement_group:
            key += f"#{offering.placement_group}"
        expires = int((self._clock() + ttl).timestamp())
        with transient_errors("marking an offering unavailable"):
            self._clients.dynamodb.put_item(
                TableName=self._table,
                Item={
                    PARTITION_KEY: {"S": key},
                    TTL_ATTRIBUTE: {"N": str(expires)},
                    "reason": {"S": reason[:1024]},
                },
            )
        self._read.invalidate()

    def unavailable(self) -> frozenset[OfferingKey]:
        return self._read.get_or_load("all", self._scan)

    def _scan(self) -> frozenset[OfferingKey]:
        now = str(int(self._clock().timestamp()))
        found = set()
        with transient_errors("reading unavailable offerings"):
            pages = self._clients.dynamodb.get_paginator("scan").paginate(
                TableName=self._table,
                FilterExpression="begins_with(#pk, :prefix) AND #ttl > :now",
                ExpressionAttributeNames={"#pk": PARTITION_KEY, "#ttl": TTL_ATTRIBUTE},
                ExpressionAttributeValues={":prefix": {"S": PREFIX}, ":now": {"N": now}},
                ProjectionExpression="#pk",
            )
            for page in pages:
                for item in page.get("Items", []):
                    found.add(OfferingKey(*item[PARTITION_KEY]["S"].removeprefix(PREFIX).split("#")))
        return frozenset(found)
