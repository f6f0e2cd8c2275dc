"""EKS authentication with IAM: the ``k8s-aws-v1.`` bearer token, and the cluster's endpoint and CA.

The token is a presigned STS GetCallerIdentity URL whose signature covers the ``x-k8s-aws-id`` header
(the cluster name), base64url-encoded without padding. EKS accepts it for 15 minutes after signing, so
we sign a new one a minute before that; the Kubernetes client asks before every request.
"""

from __future__ import annotations

import base64
import logging
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

TOKEN_PREFIX = "k8s-aws-v1."
CLUSTER_ID_HEADER = "x-k8s-aws-id"
TOKEN_LIFETIME_SECONDS = 15 * 60  # how long EKS honours a signature
REFRESH_MARGIN_SECONDS = 60
PRESIGN_EXPIRES_SECONDS = 60  # X-Amz-Expires, as aws-iam-authenticator and `aws eks get-token` sign


class _RedactSigning(logging.Filter):
    """botocore logs every signing at DEBUG: the canonical request (with the presigned URL's query, session token
    included) and the signature. For our presigned URL those two rebuild the bearer token, so neither is logged."""

    SECRET = ("CanonicalRequest:", "Signature:")

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str) and record.msg.startswith(self.SECRET):
            record.msg, record.args = record.msg.split(":", 1)[0] + ": <redacted>", ()
        return True


_SIGNING_LOG = logging.getLogger("botocore.auth")
if not any(isinstance(f, _RedactSigning) for f in _SIGNING_LOG.filters):
    _SIGNING_LOG.addFilter(_RedactSigning())


class EksTokenProvider:
    """Signs tokens with an STS client (boto3) and hands the Kubernetes client a fresh one when due."""

    def __init__(self, cluster_name: str, sts_client: Any, *, clock: Callable[[], float] = time.time) -> None:
        self.cluster_name = cluster_name
        self.sts = sts_client
        self.clock = clock
        self._token = ""
        self._signed_at = float("-inf")
        self.signatures = 0  # how many tokens were signed (one per refresh)
        self._lock = threading.Lock()
        self.sts.meta.events.register(
            "before-sign.sts.GetCallerIdentity", self._add_cluster_header, unique_id=f"k8s-aws-id-{id(self)}"
        )

    def _add_cluster_header(self, request: Any, **_: Any) -> None:
        request.headers[CLUSTER_ID_HEADER] = self.cluster_name

    def token(self) -> str:
        with self._lock:
            if self.clock() - self._signed_at >= TOKEN_LIFETIME_SECONDS - REFRESH_MARGIN_SECONDS:
                signed_at = self.clock()
                url = self.sts.generate_presigned_url(
                    "get_caller_identity", Params={}, ExpiresIn=PRESIGN_EXPIRES_SECONDS, HttpMethod="GET"
                )
                encoded = base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")
                self._token, self._signed_at = TOKEN_PREFIX + encoded, signed_at
                self.signatures += 1
            return self._token

    def configure(self, configuration: Any) -> None:
        """Make a ``kubernetes.client.Configuration`` send this provider's token, refreshed as it ages."""

        def refresh(conf: Any) -> None:
            conf.api_key["BearerToken"] = self.token()

        configuration.api_key_prefix["BearerToken"] = "Bearer"
        configuration.refresh_api_key_hook = refresh
        refresh(configuration)


def decode_token(token: str) -> str:
    """The presigned URL inside a token (for tests and troubleshooting)."""
    if not token.startswith(TOKEN_PREFIX):
        raise ValueError(f"not an EKS token: it must start with {TOKEN_PREFIX!r}")
    payload = token[len(TOKEN_PREFIX) :]
    return base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)).decode()


@dataclass(frozen=True)
class ClusterEndpoint:
    url: str
    ca_file: str  # the CA bundle written to a file, as the client's TLS settings want a path


_ENDPOINTS: dict[tuple[str, str], ClusterEndpoint] = {}
_ENDPOINTS_LOCK = threading.Lock()


def describe_cluster(cluster_name: str, eks_client: Any) -> ClusterEndpoint:
    """The API endpoint and CA of an EKS cluster, from DescribeCluster once per process (warm Lambdas reuse it)."""
    key = (cluster_name, eks_client.meta.region_name)
    with _ENDPOINTS_LOCK:
        if key not in _ENDPOINTS:
            cluster = eks_client.describe_cluster(name=cluster_name)["cluster"]
            ca = base64.b64decode(cluster["certificateAuthority"]["data"])
            with tempfile.NamedTemporaryFile("wb", prefix=f"{cluster_name}-ca-", suffix=".crt", delete=False) as handle:
                handle.write(ca)
            _ENDPOINTS[key] = ClusterEndpoint(cluster["endpoint"], handle.name)
        return _ENDPOINTS[key]
