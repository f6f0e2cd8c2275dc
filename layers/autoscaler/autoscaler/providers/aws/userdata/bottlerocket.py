"""Bottlerocket user data: the user's TOML with ``settings.kubernetes`` filled in by us. Pure.

tomlkit keeps the user's own settings and formatting; the keys we own (cluster, labels, taints, kubelet
settings) overwrite whatever the user wrote for them.
"""

from __future__ import annotations

from typing import Any

import tomlkit
from tomlkit.exceptions import TOMLKitError

from autoscaler.providers.aws.userdata.options import BootstrapOptions, UserDataError


def _table(parent: Any, key: str) -> Any:
    if key not in parent:
        parent[key] = tomlkit.table()
    child = parent[key]
    if not isinstance(child, dict):
        raise UserDataError(f"userData TOML: '{key}' must be a table")
    return child


def render(options: BootstrapOptions) -> str:
    try:
        document = tomlkit.parse(options.custom_user_data or "")
    except TOMLKitError as error:
        raise UserDataError(f"userData is not valid TOML: {error}") from error
    kubernetes = _table(_table(document, "settings"), "kubernetes")
    cluster, kubelet = options.cluster, options.kubelet
    kubernetes["cluster-name"] = cluster.name
    kubernetes["api-server"] = cluster.endpoint
    if cluster.ca_bundle:
        kubernetes["cluster-certificate"] = cluster.ca_bundle
    if options.labels:
        labels = _table(kubernetes, "node-labels")
        for key in sorted(options.labels):
            labels[key] = options.labels[key]
    taints: dict[str, list[str]] = {}
    for taint in options.taints:
        taints.setdefault(taint.key, []).append(f"{taint.value or ''}:{taint.effect}")
    kubernetes["node-taints"] = taints
    if kubelet.max_pods is not None:
        kubernetes["max-pods"] = kubelet.max_pods
    if kubelet.cluster_dns:
        kubernetes["cluster-dns-ip"] = kubelet.cluster_dns[0]
    for key, values in (
        ("system-reserved", kubelet.system_reserved),
        ("kube-reserved", kubelet.kube_reserved),
        ("eviction-hard", kubelet.eviction_hard),
    ):
        if values is not None:
            kubernetes[key] = dict(sorted(values.items()))
    if kubelet.image_gc_high is not None:
        kubernetes["image-gc-high-threshold-percent"] = str(kubelet.image_gc_high)
    if kubelet.image_gc_low is not None:
        kubernetes["image-gc-low-threshold-percent"] = str(kubelet.image_gc_low)
    if kubelet.cpu_cfs_quota is not None:
        kubernetes["cpu-cfs-quota-enforced"] = kubelet.cpu_cfs_quota
    return tomlkit.dumps(document)
