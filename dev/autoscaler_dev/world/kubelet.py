"""What a node's kubelet does when its instance boots, for the embedded world: register a Node with the
labels and taints the NodeClaim's user data gave it, report it Ready, and (as the kube-scheduler would)
bind pods to it. Writes go straight into the emulator's store, as the kubelet's own API calls would."""

from __future__ import annotations

import ipaddress
import zlib
from collections.abc import Mapping
from typing import Any

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler_dev.kube_emulator.emulator import KubeEmulator

KUBELET_VERSION = "v1.30.0-eks-1234567"


def node_name(nodeclaim: NodeClaim, region: str) -> str:
    """An EC2 private DNS name (``ip-10-0-12-34.<region>.compute.internal``), stable per provider ID."""
    provider_id = nodeclaim.status.provider_id if nodeclaim.status else nodeclaim.name
    address = ipaddress.IPv4Address(0x0A000000 + zlib.crc32(str(provider_id).encode()) % 0x1000000)
    return f"ip-{str(address).replace('.', '-')}.{region}.compute.internal"


def node_for(
    nodeclaim: NodeClaim, region: str = "us-west-2", *, ready: bool = True, startup_taints: bool = True
) -> dict[str, Any]:
    """The Node a kubelet registers for ``nodeclaim`` (launched: it has a provider ID and its labels)."""
    status = nodeclaim.status
    if status is None or not status.provider_id:
        raise ValueError(f"NodeClaim {nodeclaim.name} has not launched: no instance can register a node")
    name = node_name(nodeclaim, region)
    labels = {
        **(nodeclaim.metadata.labels or {}),
        wk.LABEL_HOSTNAME: name,
        wk.LABEL_REGION: region,
        wk.LABEL_OS: (nodeclaim.metadata.labels or {}).get(wk.LABEL_OS, "linux"),
    }
    spec = nodeclaim.spec
    taints = [t.to_dict() for t in spec.taints or []]
    if startup_taints:
        taints += [t.to_dict() for t in spec.startup_taints or []]
    taints.append({"key": wk.TAINT_UNREGISTERED, "effect": "NoExecute"})
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {"providerID": status.provider_id, "taints": taints},
        "status": {
            "capacity": dict(status.capacity or {}),
            "allocatable": dict(status.allocatable or {}),
            "conditions": [{"type": "Ready", "status": "True" if ready else "False", "reason": "KubeletReady"}],
            "nodeInfo": {"kubeletVersion": KUBELET_VERSION},
        },
    }


def join(kube: KubeEmulator, nodeclaim: NodeClaim, region: str = "us-west-2", **options: Any) -> dict[str, Any]:
    """Register the Node of ``nodeclaim`` (see :func:`node_for`); returns it as stored."""
    return kube.create(node_for(nodeclaim, region, **options))


def bind(kube: KubeEmulator, pod: Mapping[str, Any], node: str, scheduled_at: str | None = None) -> dict[str, Any]:
    """Bind ``pod`` to ``node`` and start it (the kube-scheduler's and the kubelet's part); ``scheduled_at`` (RFC
    3339) dates its PodScheduled condition, which disruption reads as the node's last pod event."""
    metadata = pod["metadata"]
    conditions: list[dict[str, Any]] = [{"type": "Ready", "status": "True"}]
    if scheduled_at:
        conditions.append({"type": "PodScheduled", "status": "True", "lastTransitionTime": scheduled_at})
    bound = {
        **pod,
        "metadata": {k: v for k, v in metadata.items() if k != "resourceVersion"},
        "spec": {**pod["spec"], "nodeName": node},
        "status": {"phase": "Running", "conditions": conditions},
    }
    return kube.apply(bound)
