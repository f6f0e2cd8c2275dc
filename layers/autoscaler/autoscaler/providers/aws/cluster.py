"""The EKS cluster's endpoint, CA, service CIDR, version and ARN (eks:DescribeCluster), cached."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from autoscaler.clock import utc_now
from autoscaler.providers.aws.cache import TTLCache
from autoscaler.providers.aws.clients import transient_errors
from autoscaler.providers.aws.userdata.options import ClusterInfo

if TYPE_CHECKING:
    from autoscaler.providers.aws.clients import AWSClients

CLUSTER_TTL = timedelta(minutes=15)  # a version upgrade is noticed within this long


class ClusterDescriber:
    def __init__(
        self,
        clients: AWSClients,
        cluster_name: str,
        endpoint_override: str = "",
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self._clients, self._name, self._endpoint = clients, cluster_name, endpoint_override
        self._cache: TTLCache[ClusterInfo] = TTLCache(CLUSTER_TTL, clock)

    def describe(self) -> ClusterInfo:
        return self._cache.get_or_load(self._name, self._load)

    def _load(self) -> ClusterInfo:
        with transient_errors("describing the EKS cluster"):
            cluster = self._clients.eks.describe_cluster(name=self._name)["cluster"]
        network = cluster.get("kubernetesNetworkConfig", {})
        return ClusterInfo(
            name=self._name,
            endpoint=self._endpoint or cluster.get("endpoint", ""),
            ca_bundle=cluster.get("certificateAuthority", {}).get("data"),
            service_cidr=network.get("serviceIpv4Cidr") or network.get("serviceIpv6Cidr"),
            kubernetes_version=cluster.get("version", ""),
            arn=cluster.get("arn", ""),
        )
