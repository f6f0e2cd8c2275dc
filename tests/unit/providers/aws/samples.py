"""DescribeInstanceTypes entries (trimmed to the fields the provider reads), as EC2 returns them."""

from __future__ import annotations

from typing import Any


def info(
    name: str,
    vcpus: int,
    memory_mib: int,
    *,
    arch: str = "x86_64",
    manufacturer: str = "Intel",
    enis: int = 3,
    ips_per_eni: int = 10,
    bandwidth_gbps: float = 0.75,
    **extra: Any,
) -> dict[str, Any]:
    return {
        "InstanceType": name,
        "SupportedUsageClasses": ["on-demand", "spot"],
        "Hypervisor": "nitro",
        "ProcessorInfo": {"SupportedArchitectures": [arch], "Manufacturer": manufacturer},
        "VCpuInfo": {"DefaultVCpus": vcpus},
        "MemoryInfo": {"SizeInMiB": memory_mib},
        "EbsInfo": {"EbsOptimizedSupport": "default", "EbsOptimizedInfo": {"MaximumBandwidthInMbps": 4750}},
        "NetworkInfo": {
            "MaximumNetworkInterfaces": enis,
            "DefaultNetworkCardIndex": 0,
            "NetworkCards": [
                {"NetworkCardIndex": 0, "MaximumNetworkInterfaces": enis, "BaselineBandwidthInGbps": bandwidth_gbps}
            ],
            "Ipv4AddressesPerInterface": ips_per_eni,
            "EncryptionInTransitSupported": False,
        },
        **extra,
    }


M5_LARGE = info("m5.large", 2, 8192)
C6G_XLARGE = info("c6g.xlarge", 4, 8192, arch="arm64", manufacturer="AWS", enis=4, ips_per_eni=15, bandwidth_gbps=1.25)
G4DN_XLARGE = info(
    "g4dn.xlarge",
    4,
    16384,
    bandwidth_gbps=5.0,
    GpuInfo={"Gpus": [{"Name": "T4", "Manufacturer": "NVIDIA", "Count": 1, "MemoryInfo": {"SizeInMiB": 16384}}]},
    InstanceStorageInfo={"TotalSizeInGB": 125, "NvmeSupport": "required"},
)
INF1_XLARGE = info(
    "inf1.xlarge",
    4,
    8192,
    enis=4,
    InferenceAcceleratorInfo={"Accelerators": [{"Count": 1, "Name": "Inferentia", "Manufacturer": "AWS"}]},
)
M5_METAL = info("m5.metal", 96, 393216, enis=15, ips_per_eni=50)
