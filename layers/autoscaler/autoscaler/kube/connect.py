"""Build a Cluster for where we run: EKS with IAM (Lambda), a kubeconfig (a laptop), in-cluster (the
forwarder's pod), or a plain URL (the local emulator). The ``kubernetes`` package is imported here, on
first use, so that importing the port or the pure core never pays for it."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from autoscaler.clock import utc_now
from autoscaler.kube.client import KubernetesCluster
from autoscaler.kube.eks_auth import EksTokenProvider, describe_cluster
from autoscaler.kube.rest import KubeRest, RetryPolicy
from autoscaler.settings import Settings


def _configuration() -> Any:
    from kubernetes.client import Configuration

    configuration = Configuration()
    configuration.retries = False  # KubeRest's policy retries; urllib3 retrying underneath would multiply it
    return configuration


def _api_client(configuration: Any) -> Any:
    from kubernetes.client import ApiClient

    return ApiClient(configuration)


def plain_client(url: str, token: str = "") -> Any:
    """An ApiClient for an API server reached without TLS (the emulator on 127.0.0.1)."""
    configuration = _configuration()
    configuration.host = url.rstrip("/")
    if token:
        configuration.api_key["BearerToken"] = token
        configuration.api_key_prefix["BearerToken"] = "Bearer"
    return _api_client(configuration)


def kubeconfig_client(path: str | None = None, context: str | None = None) -> Any:
    from kubernetes import config

    configuration = _configuration()
    config.load_kube_config(config_file=path, context=context, client_configuration=configuration)  # type: ignore[no-untyped-call]
    return _api_client(configuration)


def in_cluster_client() -> Any:
    from kubernetes import config

    configuration = _configuration()
    config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
    return _api_client(configuration)


def eks_client(cluster_name: str, *, session: Any = None, endpoint: str = "") -> Any:
    """An ApiClient for an EKS cluster authenticated with the caller's IAM identity (token refreshed as it ages);
    endpoint and CA come from DescribeCluster (cached per process)."""
    import boto3

    session = session or boto3.session.Session()
    described = describe_cluster(cluster_name, session.client("eks"))
    configuration = _configuration()
    configuration.host = (endpoint or described.url).rstrip("/")
    configuration.ssl_ca_cert = described.ca_file
    EksTokenProvider(cluster_name, session.client("sts")).configure(configuration)
    return _api_client(configuration)


def api_client_from_environment(settings: Settings, environ: Mapping[str, str] | None = None) -> Any:
    """KUBECONFIG set: that kubeconfig. In a pod: the service account. CLUSTER_ENDPOINT over plain http: that
    URL (the emulator). Otherwise EKS with IAM."""
    env = os.environ if environ is None else environ
    if env.get("KUBECONFIG"):
        return kubeconfig_client(env["KUBECONFIG"])
    if env.get("KUBERNETES_SERVICE_HOST"):
        return in_cluster_client()
    if settings.cluster_endpoint.startswith("http://"):
        return plain_client(settings.cluster_endpoint)
    return eks_client(settings.cluster_name, endpoint=settings.cluster_endpoint)


def cluster_from_environment(
    settings: Settings, retry: RetryPolicy | None = None, now: Callable[[], datetime] = utc_now
) -> KubernetesCluster:
    """The Cluster adapter for where we run; ``now`` dates the events it records."""
    return KubernetesCluster(KubeRest(api_client_from_environment(settings), retry=retry), now=now)
