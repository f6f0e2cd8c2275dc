"""The provisioner's record of its last pass, in a DynamoDB state table on moto."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from autoscaler.cloudprovider.errors import CloudProviderError
from autoscaler.providers.aws.lastpass import DynamoDBLastPass
from autoscaler.settings import LAST_PASS_ID, STATE_TABLE_KEY, STATE_TABLE_TTL
from autoscaler_dev.world.aws_world import AWSWorld
from tests.support.lambdas import state_table


def test_the_last_pass_is_recorded_and_never_moves_back(aws_world: AWSWorld) -> None:
    store = DynamoDBLastPass(aws_world.clients(), state_table(aws_world))
    assert store.started_at() is None
    now = datetime.now(UTC).replace(microsecond=123456)
    store.record(now)
    store.record(now - timedelta(seconds=5))  # a late, older pass
    assert store.started_at() == now


def test_an_expired_record_is_ignored(aws_world: AWSWorld) -> None:
    table = state_table(aws_world)
    aws_world.client("dynamodb").put_item(
        TableName=table,
        Item={STATE_TABLE_KEY: {"S": LAST_PASS_ID}, "started_at": {"N": "1000.5"}, STATE_TABLE_TTL: {"N": "2000"}},
    )
    assert DynamoDBLastPass(aws_world.clients(), table).started_at() is None


def test_a_missing_table_is_a_typed_error(aws_world: AWSWorld) -> None:
    store = DynamoDBLastPass(aws_world.clients(), "no-such-table")
    with pytest.raises(CloudProviderError, match="ResourceNotFoundException"):
        store.started_at()
    with pytest.raises(CloudProviderError, match="ResourceNotFoundException"):
        store.record(datetime.now(UTC))
