"""boto3 clients, built in one place: adaptive retries, bounded timeouts, and an endpoint override
(``AWS_ENDPOINT_URL``) so the same code runs against moto. Also the mapping of AWS errors to ours."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cached_property
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError, ConnectionError, HTTPClientError

from autoscaler.cloudprovider.errors import TransientCloudError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_ec2 import EC2Client
    from mypy_boto3_eks import EKSClient
    from mypy_boto3_iam import IAMClient
    from mypy_boto3_pricing import PricingClient
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_ssm import SSMClient

CLIENT_CONFIG = Config(
    retries={"mode": "adaptive", "max_attempts": 5},
    connect_timeout=5,
    read_timeout=30,
    user_agent_extra="serverless-karpenter",
)
# The Pricing API lives in a few regions only; us-east-1 serves every commercial region's prices.
PRICING_REGION = "us-east-1"
THROTTLING_CODES = frozenset(
    {"Throttling", "ThrottlingException", "RequestLimitExceeded", "TooManyRequestsException", "RequestThrottled"}
)
SERVER_CODES = frozenset(
    {"InternalError", "InternalFailure", "ServiceUnavailable", "Unavailable", "InternalServerError"}
)


class AWSClients:
    """Lazily built clients for one region; share one instance per process so connections are reused."""

    def __init__(
        self,
        region: str,
        endpoint_url: str | None = None,
        session: boto3.Session | None = None,
        config: Config = CLIENT_CONFIG,
    ) -> None:
        self.region = region
        self.config = config
        self.endpoint_url = endpoint_url or os.environ.get("AWS_ENDPOINT_URL") or None
        self._session = session or boto3.Session()

    def _client(self, service: Any, region: str | None = None) -> Any:
        return self._session.client(
            service, region_name=region or self.region, endpoint_url=self.endpoint_url, config=self.config
        )

    @cached_property
    def ec2(self) -> EC2Client:
        client: EC2Client = self._client("ec2")
        return client

    @cached_property
    def ssm(self) -> SSMClient:
        client: SSMClient = self._client("ssm")
        return client

    @cached_property
    def eks(self) -> EKSClient:
        client: EKSClient = self._client("eks")
        return client

    @cached_property
    def iam(self) -> IAMClient:
        client: IAMClient = self._client("iam")
        return client

    @cached_property
    def pricing(self) -> PricingClient:
        client: PricingClient = self._client("pricing", PRICING_REGION)
        return client

    @cached_property
    def dynamodb(self) -> DynamoDBClient:
        client: DynamoDBClient = self._client("dynamodb")
        return client

    @cached_property
    def sqs(self) -> SQSClient:
        client: SQSClient = self._client("sqs")
        return client

    @cached_property
    def arc_zonal_shift(self) -> Any:
        # Untyped: one call (GetManagedResource) does not justify another stubs package in the dev pins.
        return self._client("arc-zonal-shift")


def error_code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


def error_message(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Message", ""))


def is_not_found(error: ClientError) -> bool:
    code = error_code(error)
    return code.endswith(("NotFound", "NotFoundException", ".Malformed")) or code in (
        "NoSuchEntity",
        "ParameterNotFound",
    )


def is_transient(error: ClientError) -> bool:
    status = int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
    return error_code(error) in THROTTLING_CODES or error_code(error) in SERVER_CODES or status >= 500


@contextmanager
def transient_errors(action: str) -> Iterator[None]:
    """Turn throttling, 5xx and connection failures that outlasted the retries into TransientCloudError."""
    try:
        yield
    except ClientError as error:
        if is_transient(error):
            raise TransientCloudError(f"{action}: {error_code(error)}: {error_message(error)}") from error
        raise
    except (ConnectionError, HTTPClientError) as error:
        raise TransientCloudError(f"{action}: {error}") from error
