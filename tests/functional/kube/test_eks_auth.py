"""EKS IAM authentication against moto over HTTP: the token's format, its signature's headers, its refresh,
and the cluster endpoint and CA from DescribeCluster."""

from __future__ import annotations

import base64
from pathlib import Path
from urllib.parse import parse_qs, urlparse

from autoscaler.kube import eks_auth
from autoscaler.kube.eks_auth import EksTokenProvider, decode_token, describe_cluster
from tests.support.aws import MotoEndpoint


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


def test_token_is_a_presigned_get_caller_identity_bound_to_the_cluster(moto: MotoEndpoint) -> None:
    provider = EksTokenProvider("prod", moto.client("sts"))
    token = provider.token()
    assert token.startswith("k8s-aws-v1.") and "=" not in token
    url = decode_token(token)
    query = parse_qs(urlparse(url).query)
    assert query["Action"] == ["GetCallerIdentity"] and query["Version"] == ["2011-06-15"]
    assert query["X-Amz-Expires"] == ["60"]
    assert "x-k8s-aws-id" in query["X-Amz-SignedHeaders"][0].split(";")
    assert query["X-Amz-Credential"][0].endswith("/us-west-2/sts/aws4_request")
    assert url.startswith(moto.url)  # signed for the STS endpoint the client was given
    assert decode_token(provider.token()) == url  # reused while fresh


def test_token_is_reused_until_a_minute_before_expiry(moto: MotoEndpoint) -> None:
    clock = FakeClock()
    provider = EksTokenProvider("prod", moto.client("sts"), clock=clock)
    first = provider.token()
    clock.now += 13 * 60
    assert provider.token() == first and provider.signatures == 1
    clock.now += 60  # 14 minutes: one minute of validity left
    refreshed = provider.token()
    assert provider.signatures == 2 and decode_token(refreshed).startswith(moto.url)
    assert provider.token() == refreshed and provider.signatures == 2


def test_configure_refreshes_the_clients_bearer_token(moto: MotoEndpoint) -> None:
    from kubernetes.client import Configuration

    clock = FakeClock()
    provider = EksTokenProvider("prod", moto.client("sts"), clock=clock)
    configuration = Configuration()
    provider.configure(configuration)
    first = configuration.get_api_key_with_prefix("BearerToken")
    assert first == f"Bearer {provider.token()}" and provider.signatures == 1
    configuration.get_api_key_with_prefix("BearerToken")  # every request asks; a fresh token is reused
    assert provider.signatures == 1
    clock.now += 15 * 60
    assert configuration.get_api_key_with_prefix("BearerToken").startswith("Bearer k8s-aws-v1.")
    assert provider.signatures == 2


def test_describe_cluster_gives_endpoint_and_ca_once(moto: MotoEndpoint, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(eks_auth, "_ENDPOINTS", {})
    eks = moto.client("eks")
    iam_role = "arn:aws:iam::123456789012:role/eks"
    eks.create_cluster(name="prod", roleArn=iam_role, resourcesVpcConfig={"subnetIds": []})
    described = describe_cluster("prod", eks)
    cluster = eks.describe_cluster(name="prod")["cluster"]
    assert described.url == cluster["endpoint"]
    assert Path(described.ca_file).read_bytes() == base64.b64decode(cluster["certificateAuthority"]["data"])
    eks.delete_cluster(name="prod")
    assert describe_cluster("prod", eks) == described  # cached for the life of the process
