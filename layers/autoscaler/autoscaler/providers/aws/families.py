"""What each AMI family means for a node: where its EKS-optimized AMIs are published in SSM, which
instance types each variant serves, its default volumes and how it counts pods. Pure.

The SSM parameter layout is AWS's public one (``/aws/service/eks/optimized-ami/...``,
``/aws/service/bottlerocket/...``, ``/aws/service/ami-windows-latest/...``).
"""

from __future__ import annotations

from dataclasses import dataclass

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.ec2nodeclass import AMIFamily, AMIRequirement, BlockDevice, BlockDeviceMapping

LATEST = "latest"
ARCHITECTURES = {"x86_64": wk.ARCH_AMD64, "arm64": wk.ARCH_ARM64}  # EC2 name -> Kubernetes name
WINDOWS_BUILDS: dict[str, str] = {"Windows2019": "10.0.17763", "Windows2022": "10.0.20348", "Windows2025": "10.0.26100"}
WINDOWS_FAMILIES = tuple(WINDOWS_BUILDS)

# Which instance types an AMI variant serves, as requirements on the instance type's labels.
STANDARD = "standard"
NVIDIA = "nvidia"
NEURON = "neuron"
_VARIANT_REQUIREMENTS: dict[str, tuple[tuple[str, str], ...]] = {
    STANDARD: ((wk.LABEL_INSTANCE_ACCELERATOR_COUNT, "DoesNotExist"), (wk.LABEL_INSTANCE_GPU_COUNT, "DoesNotExist")),
    NVIDIA: ((wk.LABEL_INSTANCE_GPU_COUNT, "Exists"),),
    NEURON: ((wk.LABEL_INSTANCE_ACCELERATOR_COUNT, "Exists"),),
}


@dataclass(frozen=True)
class AliasParameter:
    """An SSM parameter holding an AMI id, and the requirement sets the AMI serves (one AMI can serve
    several: AL2's GPU AMI runs both NVIDIA and Neuron instances)."""

    path: str
    requirement_sets: tuple[tuple[AMIRequirement, ...], ...]


def variant_requirements(variant: str) -> tuple[AMIRequirement, ...]:
    return tuple(AMIRequirement(key=k, operator=op) for k, op in _VARIANT_REQUIREMENTS[variant])


def _windows_requirements(build: str) -> tuple[AMIRequirement, ...]:
    return (
        AMIRequirement(key=wk.LABEL_OS, operator="In", values=["windows"]),
        AMIRequirement(key=wk.LABEL_WINDOWS_BUILD, operator="In", values=[build]),
    )


def alias_parameters(family: AMIFamily, kubernetes_version: str, version: str) -> list[AliasParameter]:
    """The SSM parameters an alias ``<family>@<version>`` resolves through."""
    k8s, latest = kubernetes_version, version == LATEST

    def sets(*variants: str) -> tuple[tuple[AMIRequirement, ...], ...]:
        return tuple(variant_requirements(v) for v in variants)

    if family == "AL2":
        base = f"/aws/service/eks/optimized-ami/{k8s}"
        names = {"amazon-linux-2": "node", "amazon-linux-2-arm64": "arm64-node", "amazon-linux-2-gpu": "gpu-node"}
        return [
            AliasParameter(
                f"{base}/{path}/{'recommended' if latest else f'amazon-eks-{name}-{k8s}-{version}'}/image_id",
                sets(NVIDIA, NEURON) if path.endswith("gpu") else sets(STANDARD),
            )
            for path, name in names.items()
        ]
    if family == "AL2023":
        variants = {"x86_64": (STANDARD, NVIDIA, NEURON), "arm64": (STANDARD, NVIDIA)}
        parameters = []
        for arch, arch_variants in variants.items():
            for variant in arch_variants:
                leaf = "recommended" if latest else f"amazon-eks-node-al2023-{arch}-{variant}-{k8s}-{version}"
                path = f"/aws/service/eks/optimized-ami/{k8s}/amazon-linux-2023/{arch}/{variant}/{leaf}/image_id"
                parameters.append(AliasParameter(path, sets(variant)))
        return parameters
    if family == "Bottlerocket":
        trimmed = version.lstrip("v")  # release tags carry a "v" that the parameter path does not
        return [
            AliasParameter(
                f"/aws/service/bottlerocket/aws-k8s-{k8s}{flavour}/{arch}/{trimmed}/image_id",
                sets(NVIDIA, NEURON) if flavour else sets(STANDARD),
            )
            for flavour in ("", "-nvidia")
            for arch in ("x86_64", "arm64")
        ]
    if family in WINDOWS_BUILDS:
        year = family.removeprefix("Windows")
        path = f"/aws/service/ami-windows-latest/Windows_Server-{year}-English-Core-EKS_Optimized-{k8s}/image_id"
        return [AliasParameter(path, (_windows_requirements(WINDOWS_BUILDS[family]),))]
    return []  # Custom: AMIs come only from selector terms


@dataclass(frozen=True)
class FamilyTraits:
    """How a family boots: its root/ephemeral volume and its pod-density behaviour."""

    ephemeral_device: str | None
    default_block_devices: tuple[BlockDeviceMapping, ...]
    eni_limited_memory_overhead: bool = True  # kube-reserved memory follows the ENI-limited pod count
    pods_per_core_enabled: bool = True
    eviction_soft_enabled: bool = True
    eni_limited_pod_density: bool = True  # else 110 pods unless maxPods says otherwise


def _ebs(device: str, size: str) -> BlockDeviceMapping:
    return BlockDeviceMapping(device_name=device, ebs=BlockDevice(encrypted=True, volume_type="gp3", volume_size=size))


DEFAULT_VOLUME_SIZE = "20Gi"
_LINUX = FamilyTraits("/dev/xvda", (_ebs("/dev/xvda", DEFAULT_VOLUME_SIZE),))
_TRAITS: dict[str, FamilyTraits] = {
    "AL2": _LINUX,
    "AL2023": _LINUX,
    "Bottlerocket": FamilyTraits(
        "/dev/xvdb",
        (_ebs("/dev/xvda", "4Gi"), _ebs("/dev/xvdb", DEFAULT_VOLUME_SIZE)),
        eni_limited_memory_overhead=False,
        pods_per_core_enabled=False,
        eviction_soft_enabled=False,
    ),
    "Custom": FamilyTraits(None, ()),
    **{
        family: FamilyTraits(
            "/dev/sda1", (_ebs("/dev/sda1", "50Gi"),), eni_limited_memory_overhead=False, eni_limited_pod_density=False
        )
        for family in WINDOWS_FAMILIES
    },
}


def traits(family: AMIFamily) -> FamilyTraits:
    return _TRAITS[family]


def is_windows(family: AMIFamily) -> bool:
    return family in WINDOWS_BUILDS
