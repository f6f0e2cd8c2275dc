"""What every bootstrap format needs to know about the cluster and the node. Pure."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass, field

from autoscaler.apis.duration import format_duration, parse_duration
from autoscaler.apis.v1.common import Taint
from autoscaler.apis.v1.kubelet import KubeletConfiguration


class UserDataError(ValueError):
    """The EC2NodeClass's userData cannot be merged (malformed MIME, TOML, ...), or a setting the family
    needs is missing. The message says which; ``missing`` names the ClusterInfo field when one is absent."""

    def __init__(self, message: str, *, missing: str = "") -> None:
        super().__init__(message)
        self.missing = missing


@dataclass(frozen=True)
class ClusterInfo:
    """The EKS cluster as nodes see it (eks:DescribeCluster)."""

    name: str
    endpoint: str
    ca_bundle: str | None = None  # base64 PEM, as EKS returns it
    service_cidr: str | None = None
    kubernetes_version: str = ""
    arn: str = ""

    @property
    def ipv6(self) -> bool:
        """An IPv6 cluster (its service CIDR is IPv6): nodes get IPv6 prefixes and a primary IPv6 address."""
        return bool(self.service_cidr) and ipaddress.ip_network(str(self.service_cidr), strict=False).version == 6

    @property
    def dns_ip(self) -> str | None:
        """kube-dns's address: the tenth address of the service CIDR, as EKS assigns it."""
        if not self.service_cidr:
            return None
        network = ipaddress.ip_network(self.service_cidr, strict=False)
        return str(network.network_address + 10)


@dataclass(frozen=True)
class BootstrapOptions:
    """The node-specific inputs of user data. ``kubelet`` is the effective configuration: the class's
    settings with maxPods and clusterDNS already defaulted."""

    cluster: ClusterInfo
    kubelet: KubeletConfiguration = field(default_factory=KubeletConfiguration)
    taints: tuple[Taint, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)
    custom_user_data: str | None = None
    instance_store_policy: str | None = None

    @property
    def raid0(self) -> bool:
        return self.instance_store_policy == "RAID0"


def quoted(text: str) -> str:
    """A double-quoted argument, escaped as Go's %q would for the characters labels and taints allow."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def taint_text(taint: Taint) -> str:
    """``key=value:Effect`` (or ``key:Effect``), the kubelet's --register-with-taints syntax."""
    return f"{taint.key}={taint.value}:{taint.effect}" if taint.value else f"{taint.key}:{taint.effect}"


def node_labels_flag(labels: Mapping[str, str]) -> str | None:
    if not labels:
        return None
    return "--node-labels=" + quoted(",".join(f"{k}={labels[k]}" for k in sorted(labels)))


def _mapping_flag(name: str, values: Mapping[str, str] | None, separator: str) -> str | None:
    if not values:
        return None
    return f"{name}=" + quoted(",".join(f"{k}{separator}{values[k]}" for k in sorted(values)))


def kubelet_flags(options: BootstrapOptions) -> list[str]:
    """The kubelet flags that carry labels, taints and the class's kubelet settings, in a stable order."""
    kubelet = options.kubelet
    grace = kubelet.eviction_soft_grace_period
    flags = [
        node_labels_flag(options.labels),
        "--register-with-taints=" + quoted(",".join(taint_text(t) for t in options.taints)),
        f"--max-pods={kubelet.max_pods}" if kubelet.max_pods is not None else None,
        f"--pods-per-core={kubelet.pods_per_core}" if kubelet.pods_per_core is not None else None,
        _mapping_flag("--system-reserved", kubelet.system_reserved, "="),
        _mapping_flag("--kube-reserved", kubelet.kube_reserved, "="),
        _mapping_flag("--eviction-hard", kubelet.eviction_hard, "<"),
        _mapping_flag("--eviction-soft", kubelet.eviction_soft, "<"),
        _mapping_flag(
            "--eviction-soft-grace-period",
            {k: format_duration(parse_duration(v)) for k, v in grace.items()} if grace else None,
            "=",
        ),
        (
            f"--eviction-max-pod-grace-period={kubelet.eviction_max_pod_grace_period}"
            if kubelet.eviction_max_pod_grace_period is not None
            else None
        ),
        f"--image-gc-high-threshold={kubelet.image_gc_high}" if kubelet.image_gc_high is not None else None,
        f"--image-gc-low-threshold={kubelet.image_gc_low}" if kubelet.image_gc_low is not None else None,
        f"--cpu-cfs-quota={str(kubelet.cpu_cfs_quota).lower()}" if kubelet.cpu_cfs_quota is not None else None,
    ]
    return [flag for flag in flags if flag]


def is_mime(text: str) -> bool:
    stripped = text.lstrip()
    return stripped.startswith(("MIME-Version:", "Content-Type:"))
