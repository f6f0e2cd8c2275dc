"""An EC2 instance type as the scheduler sees it, computed from a DescribeInstanceTypes entry. Pure.

Labels are Karpenter's well-known ones; capacity reflects the VM's memory overhead, the root volume
and the pod density the family and kubelet settings allow; overhead is kube-reserved (Karpenter's
formula, overridable by ``kubeReserved``), system-reserved and the hard eviction thresholds.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from autoscaler.apis.quantity import units
from autoscaler.apis.resources import Resources, maximum, parse_resources
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.ec2nodeclass import AMIFamily, BlockDeviceMapping, NetworkInterface
from autoscaler.apis.v1.kubelet import KubeletConfiguration
from autoscaler.cloudprovider.types import InstanceType, InstanceTypeOverhead, Offering
from autoscaler.providers.aws import families

MIB = 2**20
DEFAULT_PODS = 110
GRAVITON_CMA_MIB = 64  # memory Graviton kernels reserve for the contiguous memory allocator
_NAME = re.compile(r"^([a-z]+)(-[0-9]+tb)?([0-9]+).*\.")
# kube-reserved CPU: a share of each band of the node's cores (the EKS AMIs' formula).
_CPU_BANDS = ((0, 1000, 0.06), (1000, 2000, 0.01), (2000, 4000, 0.005), (4000, 1 << 31, 0.0025))


@dataclass(frozen=True)
class NodeSettings:
    """The node class's settings that shape an instance type's capacity and overhead."""

    family: AMIFamily
    region: str
    kubelet: KubeletConfiguration | None = None
    block_device_mappings: tuple[BlockDeviceMapping, ...] = ()
    instance_store_policy: str | None = None
    vm_memory_overhead_percent: float = 0.075
    reserved_enis: int = 0
    network_interfaces: tuple[NetworkInterface, ...] | None = None  # the class's, when it lists any
    nested_virtualization: bool = False
    connection_tracking: bool = False


def _kebab(text: str) -> str:
    return text.lower().replace(" ", "-")


def architecture(info: Mapping[str, Any]) -> str | None:
    for arch in info.get("ProcessorInfo", {}).get("SupportedArchitectures", []):
        if arch in families.ARCHITECTURES:
            return families.ARCHITECTURES[arch]
    return None


def _accelerators(info: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    neuron = info.get("NeuronInfo", {}).get("NeuronDevices")
    return list(neuron or info.get("InferenceAcceleratorInfo", {}).get("Accelerators", []))


def labels(info: Mapping[str, Any], family: AMIFamily, region: str) -> dict[str, str] | None:
    """The instance type's well-known labels, or None when the family cannot run on it (Windows on arm64,
    an architecture Kubernetes does not know)."""
    name, arch = info["InstanceType"], architecture(info)
    if arch is None or (families.is_windows(family) and arch != wk.ARCH_AMD64):
        return None
    network = info.get("NetworkInfo", {})
    result = {
        wk.LABEL_INSTANCE_TYPE: name,
        wk.LABEL_ARCH: arch,
        wk.LABEL_OS: "windows" if families.is_windows(family) else "linux",
        wk.LABEL_REGION: region,
        wk.LABEL_INSTANCE_CPU: str(info["VCpuInfo"]["DefaultVCpus"]),
        wk.LABEL_INSTANCE_MEMORY: str(info["MemoryInfo"]["SizeInMiB"]),
        wk.LABEL_INSTANCE_HYPERVISOR: info.get("Hypervisor", ""),
        wk.LABEL_INSTANCE_ENCRYPTION_IN_TRANSIT: str(bool(network.get("EncryptionInTransitSupported"))).lower(),
    }
    if families.is_windows(family):
        result[wk.LABEL_WINDOWS_BUILD] = families.WINDOWS_BUILDS[family]
    if match := _NAME.match(name):
        result[wk.LABEL_INSTANCE_CATEGORY], result[wk.LABEL_INSTANCE_GENERATION] = match.group(1), match.group(3)
    family_name, dot, size = name.partition(".")
    if dot:
        result[wk.LABEL_INSTANCE_FAMILY], result[wk.LABEL_INSTANCE_SIZE] = family_name, size
    storage = info.get("InstanceStorageInfo")
    if storage and storage.get("NvmeSupport") != "unsupported":
        result[wk.LABEL_INSTANCE_LOCAL_NVME] = str(storage.get("TotalSizeInGB", 0))
    card = _default_network_card(info)
    if card and card.get("BaselineBandwidthInGbps") is not None:
        result[wk.LABEL_INSTANCE_NETWORK_BANDWIDTH] = str(round(card["BaselineBandwidthInGbps"] * 1000))
    gpus = info.get("GpuInfo", {}).get("Gpus", [])
    if len(gpus) == 1:
        gpu = gpus[0]
        result[wk.LABEL_INSTANCE_GPU_NAME] = _kebab(gpu["Name"])
        result[wk.LABEL_INSTANCE_GPU_MANUFACTURER] = _kebab(gpu["Manufacturer"])
        result[wk.LABEL_INSTANCE_GPU_COUNT] = str(gpu["Count"])
        result[wk.LABEL_INSTANCE_GPU_MEMORY] = str(gpu.get("MemoryInfo", {}).get("SizeInMiB", 0))
    accelerators = _accelerators(info)
    if len(accelerators) == 1:
        accelerator = accelerators[0]
        result[wk.LABEL_INSTANCE_ACCELERATOR_NAME] = _kebab(accelerator["Name"])
        result[wk.LABEL_INSTANCE_ACCELERATOR_MANUFACTURER] = _kebab(
            accelerator.get("Manufacturer", "AWS")
        )  # Neuron devices name no maker
        result[wk.LABEL_INSTANCE_ACCELERATOR_COUNT] = str(accelerator["Count"])
    if manufacturer := info.get("ProcessorInfo", {}).get("Manufacturer"):
        result[wk.LABEL_INSTANCE_CPU_MANUFACTURER] = _kebab(manufacturer)
    ebs = info.get("EbsInfo", {})
    if ebs.get("EbsOptimizedSupport") == "default" and "EbsOptimizedInfo" in ebs:
        result[wk.LABEL_INSTANCE_EBS_BANDWIDTH] = str(ebs["EbsOptimizedInfo"]["MaximumBandwidthInMbps"])
    return result


def _default_network_card(info: Mapping[str, Any]) -> Mapping[str, Any] | None:
    network = info.get("NetworkInfo", {})
    index = network.get("DefaultNetworkCardIndex", 0)
    return next((c for c in network.get("NetworkCards", []) if c.get("NetworkCardIndex") == index), None)


def _efa_only_on_card0(interfaces: Sequence[NetworkInterface] | None) -> int:
    return sum(1 for n in interfaces or () if n.network_card_index == 0 and n.interface_type == "efa-only")


def eni_limited_pods(
    info: Mapping[str, Any], reserved_enis: int = 0, nics: Sequence[NetworkInterface] | None = None
) -> int:
    """The VPC CNI's pod limit: usable ENIs x (IPv4 addresses per ENI - 1) + 2 (host-network pods). The CNI
    uses the default card only; an EFA-only interface on it takes an ENI slot and carries no IPs. Prefix
    delegation (``ipPrefixCount``) does not change it, as in Karpenter: raise ``maxPods`` for that."""
    network = info.get("NetworkInfo", {})
    card = _default_network_card(info)
    interfaces = card["MaximumNetworkInterfaces"] if card else network.get("MaximumNetworkInterfaces", 0)
    usable = max(interfaces - reserved_enis - _efa_only_on_card0(nics), 0)
    if usable == 0:
        return 0
    return int(usable * (network.get("Ipv4AddressesPerInterface", 1) - 1) + 2)


def pods(info: Mapping[str, Any], settings: NodeSettings) -> int:
    kubelet, traits = settings.kubelet or KubeletConfiguration(), families.traits(settings.family)
    if kubelet.max_pods is not None:
        count = kubelet.max_pods
    elif traits.eni_limited_pod_density:
        count = eni_limited_pods(info, settings.reserved_enis, settings.network_interfaces)
    else:
        count = DEFAULT_PODS
    if kubelet.pods_per_core and traits.pods_per_core_enabled:
        count = min(kubelet.pods_per_core * info["VCpuInfo"]["DefaultVCpus"], count)
    return count


def memory(info: Mapping[str, Any], overhead_percent: float) -> int:
    """Bytes of memory the OS sees: the type's memory less the hypervisor's share (and Graviton's CMA)."""
    mib = int(info["MemoryInfo"]["SizeInMiB"])
    if info.get("ProcessorInfo", {}).get("SupportedArchitectures", [""])[0] == "arm64":
        mib -= GRAVITON_CMA_MIB
    return (mib - math.ceil(mib * MIB * overhead_percent / MIB)) * MIB


def ephemeral_storage(info: Mapping[str, Any], settings: NodeSettings) -> int:
    """Bytes of ephemeral storage: the instance store under RAID0, else the root (or ephemeral) volume."""
    storage = info.get("InstanceStorageInfo")
    if settings.instance_store_policy == "RAID0" and storage and storage.get("TotalSizeInGB") is not None:
        return int(storage["TotalSizeInGB"]) * 10**9
    traits, mappings = families.traits(settings.family), settings.block_device_mappings
    root = next((m for m in mappings if m.root_volume), None)
    if root is None and mappings:
        root = mappings[-1] if settings.family == "Custom" else _on_device(mappings, traits.ephemeral_device)
    if root is None:
        root = _on_device(traits.default_block_devices, traits.ephemeral_device)
    size = root.ebs.volume_size if root and root.ebs else None
    return units(size or families.DEFAULT_VOLUME_SIZE)


def _on_device(mappings: Sequence[BlockDeviceMapping], device: str | None) -> BlockDeviceMapping | None:
    return next((m for m in mappings if device and m.device_name == device), None)


def _count(items: Sequence[Mapping[str, Any]], manufacturer: str | None = None) -> int:
    return sum(int(i.get("Count", 0)) for i in items if manufacturer is None or i.get("Manufacturer") == manufacturer)


def capacity(info: Mapping[str, Any], settings: NodeSettings) -> Resources:
    gpus = info.get("GpuInfo", {}).get("Gpus", [])
    result = {
        wk.RESOURCE_CPU: int(info["VCpuInfo"]["DefaultVCpus"]) * 1000,
        wk.RESOURCE_MEMORY: memory(info, settings.vm_memory_overhead_percent),
        wk.RESOURCE_EPHEMERAL_STORAGE: ephemeral_storage(info, settings),
        wk.RESOURCE_PODS: pods(info, settings),
        wk.RESOURCE_NVIDIA_GPU: _count(gpus, "NVIDIA"),
        wk.RESOURCE_AMD_GPU: _count(gpus, "AMD"),
        wk.RESOURCE_HABANA_GAUDI: _count(gpus, "Habana"),
        wk.RESOURCE_AWS_NEURON: _count(_accelerators(info)),
        wk.RESOURCE_EFA: efas(info, settings.network_interfaces),
    }
    return {name: value for name, value in result.items() if value or name == wk.RESOURCE_PODS}


def efas(info: Mapping[str, Any], interfaces: Sequence[NetworkInterface] | None) -> int:
    """EFA devices: the class's EFA-only interfaces when it lists interfaces, else all the type has."""
    if interfaces is not None:
        return sum(1 for n in interfaces if n.interface_type == "efa-only")
    return int(info.get("NetworkInfo", {}).get("EfaInfo", {}).get("MaximumEfaInterfaces", 0))


def compatible(info: Mapping[str, Any], settings: NodeSettings) -> bool:
    """Karpenter's node class compatibility: the listed interfaces fit the type's cards (ENA, card and device
    indexes, EFA-only count), nested virtualization is supported when enabled, Nitro for connection tracking."""
    if settings.nested_virtualization and "nested-virtualization" not in info.get("ProcessorInfo", {}).get(
        "SupportedFeatures", []
    ):
        return False
    if settings.connection_tracking and info.get("Hypervisor") != "nitro":
        return False
    interfaces = settings.network_interfaces
    if interfaces is None:
        return True
    network = info.get("NetworkInfo", {})
    cards = {c.get("NetworkCardIndex"): c for c in network.get("NetworkCards", [])}
    if not cards or network.get("EnaSupport") == "unsupported":
        return False
    for nic in interfaces:
        card = cards.get(nic.network_card_index)
        if card is None or card.get("MaximumNetworkInterfaces", 0) <= nic.device_index:
            return False
    efa_only = sum(1 for n in interfaces if n.interface_type == "efa-only")
    return efa_only == 0 or efa_only <= int(network.get("EfaInfo", {}).get("MaximumEfaInterfaces", 0))


def kube_reserved(cpu_millis: int, pod_count: int, overrides: Mapping[str, str] | None) -> Resources:
    """Karpenter's kube-reserved: 11 MiB per pod + 255 MiB, 1 GiB of disk, and a share of each CPU band."""
    cpu = sum(int((min(cpu_millis, end) - start) * share) for start, end, share in _CPU_BANDS if cpu_millis >= start)
    reserved = {
        wk.RESOURCE_CPU: cpu,
        wk.RESOURCE_MEMORY: (11 * pod_count + 255) * MIB,
        wk.RESOURCE_EPHEMERAL_STORAGE: 2**30,
    }
    return {**reserved, **parse_resources(overrides)}


def _signal(capacity_amount: int, value: str) -> int:
    if value.endswith("%"):
        percent = float(value[:-1])
        return 0 if percent == 100 else math.ceil(capacity_amount / 100 * percent)  # 100% disables the signal
    return units(value)


def eviction_threshold(
    memory_bytes: int, storage_bytes: int, kubelet: KubeletConfiguration | None, eviction_soft_enabled: bool
) -> Resources:
    """The kubelet's default hard thresholds (memory.available 100Mi, nodefs.available 10%), replaced by
    the largest of the class's hard and soft thresholds where it sets them."""
    threshold = {wk.RESOURCE_MEMORY: 100 * MIB, wk.RESOURCE_EPHEMERAL_STORAGE: math.ceil(storage_bytes / 100 * 10)}
    signals = [kubelet.eviction_hard] if kubelet and kubelet.eviction_hard is not None else []
    if kubelet and kubelet.eviction_soft is not None and eviction_soft_enabled:
        signals.append(kubelet.eviction_soft)
    overrides = []
    for signal in signals:
        override = {}
        if "memory.available" in signal:
            override[wk.RESOURCE_MEMORY] = _signal(memory_bytes, signal["memory.available"])
        if "nodefs.available" in signal:
            override[wk.RESOURCE_EPHEMERAL_STORAGE] = _signal(storage_bytes, signal["nodefs.available"])
        overrides.append(override)
    return {**threshold, **maximum(overrides)}


def build(info: Mapping[str, Any], settings: NodeSettings, offerings: Sequence[Offering]) -> InstanceType | None:
    """The InstanceType for ``info`` under ``settings``; None when the family cannot run on it."""
    type_labels = labels(info, settings.family, settings.region)
    if type_labels is None or not compatible(info, settings):
        return None
    traits, kubelet = families.traits(settings.family), settings.kubelet
    type_capacity = capacity(info, settings)
    reserved_pods = (
        eni_limited_pods(info, settings.reserved_enis, settings.network_interfaces)
        if traits.eni_limited_memory_overhead
        else None
    )
    overhead = InstanceTypeOverhead(
        kube_reserved=kube_reserved(
            type_capacity[wk.RESOURCE_CPU],
            reserved_pods if reserved_pods is not None else type_capacity[wk.RESOURCE_PODS],
            kubelet.kube_reserved if kubelet else None,
        ),
        system_reserved=parse_resources(kubelet.system_reserved if kubelet else None),
        eviction_threshold=eviction_threshold(
            type_capacity[wk.RESOURCE_MEMORY],
            type_capacity[wk.RESOURCE_EPHEMERAL_STORAGE],
            kubelet,
            traits.eviction_soft_enabled,
        ),
    )
    return InstanceType(info["InstanceType"], type_labels, tuple(offerings), type_capacity, overhead)
