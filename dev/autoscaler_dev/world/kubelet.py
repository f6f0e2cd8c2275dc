"""What a node's kubelet does when its instance boots, for the embedded world: register a Node with the
labels and taints the NodeClaim's user data gave it, report it Ready, and report the pods bound to it running.
Each function writes through the access it is given: in the embedded world, the node's own credentials
(``system:node:<name>``, which the Node authorizer lets write only that node and its pods)."""

from __future__ import annotations

import ipaddress
import zlib
from collections.abc import Mapping
from typing import Any

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler_dev.kube_emulator.enforcement import ActingAs, ObjectAccess
from autoscaler_dev.kube_emulator.store import timestamp

KUBELET_VERSION = "v1.30.0-eks-1234567"


def node_name(nodeclaim: NodeClaim, region: str) -> str:
    """An EC2 private DNS name (``ip-10-0-12-34.<region>.compute.internal``), stable per provider ID."""
    provider_id = nodeclaim.status.provider_id if nodeclaim.status else nodeclaim.name
    address = ipaddress.IPv4Address(0x0A000000 + zlib.crc32(str(provider_id).encode()) % 0x1000000)
    return f"ip-{str(address).replace('.', '-')}.{region}.compute.internal"


def _ip_of(name: str) -> str:
    """The private IP an EC2 DNS name spells (``ip-10-0-12-34...`` -> ``10.0.12.34``)."""
    return name.split(".", 1)[0].removeprefix("ip-").replace("-", ".")


def _public_ip(name: str) -> str:
    return str(ipaddress.IPv4Address(0x36000000 + zlib.crc32(name.encode()) % 0x1000000))  # 54.x.y.z


def node_for(
    nodeclaim: NodeClaim,
    region: str = "us-west-2",
    *,
    ready: bool = True,
    startup_taints: bool = True,
    public_ip: bool = False,
    now: str | None = None,
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
    addresses = [
        {"type": "InternalIP", "address": _ip_of(name)},
        {"type": "InternalDNS", "address": name},
        {"type": "Hostname", "address": name},
    ]
    if public_ip:  # the class associates a public IP: EC2 reports it, and so does the kubelet
        addresses.insert(1, {"type": "ExternalIP", "address": _public_ip(name)})
    times = {"lastHeartbeatTime": now, "lastTransitionTime": now} if now else {}
    pressure = [
        {"type": kind, "status": "False", "reason": f"KubeletHas{reason}", **times}
        for kind, reason in (
            ("MemoryPressure", "SufficientMemory"),
            ("DiskPressure", "NoDiskPressure"),
            ("PIDPressure", "SufficientPID"),
        )
    ]
    arch = labels.get(wk.LABEL_ARCH, "amd64")
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {"providerID": status.provider_id, "taints": taints},
        "status": {
            "capacity": dict(status.capacity or {}),
            "allocatable": dict(status.allocatable or {}),
            "conditions": [
                *pressure,
                {"type": "Ready", "status": "True" if ready else "False", "reason": "KubeletReady", **times},
            ],
            "addresses": addresses,
            "nodeInfo": {
                "kubeletVersion": KUBELET_VERSION,
                "kubeProxyVersion": KUBELET_VERSION,
                "osImage": "Amazon Linux 2023.6.20241212",
                "kernelVersion": "6.1.119-129.201.amzn2023." + ("aarch64" if arch == "arm64" else "x86_64"),
                "containerRuntimeVersion": "containerd://1.7.23",
                "operatingSystem": "linux",
                "architecture": arch,
            },
        },
    }


def join(kube: ObjectAccess, nodeclaim: NodeClaim, region: str = "us-west-2", **options: Any) -> dict[str, Any]:
    """Register the Node of ``nodeclaim`` (see :func:`node_for`); returns it as stored."""
    return kube.create(node_for(nodeclaim, region, **options))


def pod_status(pod: Mapping[str, Any], node_ip: str, started_at: str) -> dict[str, Any]:
    """A running pod as the kubelet reports it: every container started and ready, the pod Ready."""
    spec = pod.get("spec") or {}
    conditions = [
        {"type": kind, "status": "True", "lastTransitionTime": started_at}
        for kind in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")
    ]
    uid = str((pod.get("metadata") or {}).get("uid") or (pod.get("metadata") or {}).get("name"))
    pod_ip = (
        "" if spec.get("hostNetwork") else str(ipaddress.IPv4Address(0x0A000000 + zlib.crc32(uid.encode()) % 0x1000000))
    )
    containers = [
        {
            "name": c.get("name", ""),
            "image": c.get("image", ""),
            "imageID": "",
            "containerID": f"containerd://{zlib.crc32((uid + str(c.get('name'))).encode()):08x}",
            "ready": True,
            "started": True,
            "restartCount": 0,
            "state": {"running": {"startedAt": started_at}},
        }
        for c in spec.get("containers") or ()
    ]
    return {
        "phase": "Running",
        "conditions": conditions,
        "hostIP": node_ip,
        "hostIPs": [{"ip": node_ip}],
        "podIP": pod_ip or node_ip,
        "podIPs": [{"ip": pod_ip or node_ip}],
        "startTime": started_at,
        "containerStatuses": containers,
        "qosClass": "Burstable",
    }


def bind(kube: ObjectAccess, pod: Mapping[str, Any], node: str, scheduled_at: str | None = None) -> dict[str, Any]:
    """Bind ``pod`` to ``node`` and start it, both through ``kube`` (the kube-scheduler's ``pods/binding``, then
    the kubelet's report); ``scheduled_at`` (RFC 3339) dates its conditions, PodScheduled first, which disruption
    reads as the node's last pod event."""
    emulator = kube.kube if isinstance(kube, ActingAs) else kube
    moment = scheduled_at or timestamp(emulator.store.clock())
    return start(kube, kube.bind(dict(pod), node), moment)


def start(kube: ObjectAccess, pod: Mapping[str, Any], started_at: str) -> dict[str, Any]:
    """Report a pod bound to its node running (its ``status`` only, as the kubelet writes it)."""
    node = str(pod["spec"]["nodeName"])
    return kube.replace(dict(pod), {"status": pod_status(pod, _ip_of(node), started_at)}, "status")
