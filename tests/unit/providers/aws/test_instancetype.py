"""Instance types from DescribeInstanceTypes: labels, capacity and overhead, as Karpenter computes them."""

from __future__ import annotations

import pytest

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.ec2nodeclass import BlockDeviceMapping
from autoscaler.apis.v1.kubelet import KubeletConfiguration
from autoscaler.cloudprovider.types import Offering
from autoscaler.providers.aws import instancetype
from autoscaler.providers.aws.instancetype import NodeSettings
from tests.unit.providers.aws.samples import C6G_XLARGE, G4DN_XLARGE, INF1_XLARGE, M5_LARGE, M5_METAL

MI, GI = 2**20, 2**30
AL2023 = NodeSettings(family="AL2023", region="us-west-2")
OFFERINGS = (Offering("us-west-2a", "on-demand", 0.096),)


def kubelet(**fields: object) -> KubeletConfiguration:
    return KubeletConfiguration.model_validate(fields)


def test_m5_large_matches_karpenter() -> None:
    it = instancetype.build(M5_LARGE, AL2023, OFFERINGS)
    assert it is not None
    assert it.capacity == {"cpu": 2000, "memory": 7577 * MI, "ephemeral-storage": 20 * GI, "pods": 29}
    # kube-reserved: 6% of the first core + 1% of the second; 11Mi per ENI-limited pod + 255Mi; 1Gi disk.
    assert it.overhead.kube_reserved == {"cpu": 70, "memory": (11 * 29 + 255) * MI, "ephemeral-storage": GI}
    assert it.overhead.eviction_threshold == {"memory": 100 * MI, "ephemeral-storage": 2 * GI}
    assert it.allocatable == {"cpu": 1930, "memory": 6903 * MI, "ephemeral-storage": 17 * GI, "pods": 29}
    assert it.labels == {
        wk.LABEL_INSTANCE_TYPE: "m5.large",
        wk.LABEL_ARCH: "amd64",
        wk.LABEL_OS: "linux",
        wk.LABEL_REGION: "us-west-2",
        wk.LABEL_INSTANCE_CPU: "2",
        wk.LABEL_INSTANCE_MEMORY: "8192",
        wk.LABEL_INSTANCE_HYPERVISOR: "nitro",
        wk.LABEL_INSTANCE_ENCRYPTION_IN_TRANSIT: "false",
        wk.LABEL_INSTANCE_CATEGORY: "m",
        wk.LABEL_INSTANCE_GENERATION: "5",
        wk.LABEL_INSTANCE_FAMILY: "m5",
        wk.LABEL_INSTANCE_SIZE: "large",
        wk.LABEL_INSTANCE_NETWORK_BANDWIDTH: "750",
        wk.LABEL_INSTANCE_CPU_MANUFACTURER: "intel",
        wk.LABEL_INSTANCE_EBS_BANDWIDTH: "4750",
    }


def test_graviton_loses_cma_memory_and_gets_arm_labels() -> None:
    it = instancetype.build(C6G_XLARGE, AL2023, OFFERINGS)
    assert it is not None
    assert it.capacity["memory"] == (8128 - 610) * MI  # 64 MiB CMA, then 7.5% (rounded up) of the rest
    assert it.capacity["pods"] == 4 * 14 + 2
    assert it.labels[wk.LABEL_ARCH] == "arm64" and it.labels[wk.LABEL_INSTANCE_CPU_MANUFACTURER] == "aws"


def test_accelerators_become_labels_and_resources() -> None:
    gpu = instancetype.build(G4DN_XLARGE, AL2023, OFFERINGS)
    neuron = instancetype.build(INF1_XLARGE, AL2023, OFFERINGS)
    assert gpu is not None and neuron is not None
    assert gpu.capacity[wk.RESOURCE_NVIDIA_GPU] == 1
    assert (gpu.labels[wk.LABEL_INSTANCE_GPU_NAME], gpu.labels[wk.LABEL_INSTANCE_GPU_MANUFACTURER]) == ("t4", "nvidia")
    assert gpu.labels[wk.LABEL_INSTANCE_GPU_MEMORY] == "16384" and gpu.labels[wk.LABEL_INSTANCE_LOCAL_NVME] == "125"
    assert neuron.capacity[wk.RESOURCE_AWS_NEURON] == 1
    assert neuron.labels[wk.LABEL_INSTANCE_ACCELERATOR_NAME] == "inferentia"
    assert wk.LABEL_INSTANCE_GPU_COUNT not in neuron.labels


@pytest.mark.parametrize(
    ("settings", "pods"),
    [
        (NodeSettings(family="AL2023", region="r", kubelet=kubelet(maxPods=50)), 50),
        (NodeSettings(family="AL2023", region="r", kubelet=kubelet(podsPerCore=5)), 10),
        (NodeSettings(family="AL2023", region="r", reserved_enis=1), 2 * 9 + 2),
        (NodeSettings(family="AL2023", region="r", reserved_enis=3), 0),
        (NodeSettings(family="Windows2022", region="r"), 110),
        (NodeSettings(family="Bottlerocket", region="r", kubelet=kubelet(podsPerCore=5)), 29),  # not honoured there
    ],
)
def test_pods(settings: NodeSettings, pods: int) -> None:
    assert instancetype.pods(M5_LARGE, settings) == pods


def test_bottlerocket_reserves_memory_for_the_pods_it_runs_not_the_eni_limit() -> None:
    settings = NodeSettings(family="Bottlerocket", region="r", kubelet=kubelet(maxPods=110))
    it = instancetype.build(M5_LARGE, settings, OFFERINGS)
    assert it is not None and it.overhead.kube_reserved["memory"] == (11 * 110 + 255) * MI
    al2023 = instancetype.build(
        M5_LARGE, NodeSettings(family="AL2023", region="r", kubelet=kubelet(maxPods=110)), OFFERINGS
    )
    assert al2023 is not None and al2023.overhead.kube_reserved["memory"] == (11 * 29 + 255) * MI


@pytest.mark.parametrize(("millicores", "reserved"), [(1000, 60), (2000, 70), (4000, 80), (8000, 90), (96000, 310)])
def test_kube_reserved_cpu_bands(millicores: int, reserved: int) -> None:
    assert instancetype.kube_reserved(millicores, 29, None)["cpu"] == reserved


def test_kubelet_settings_override_reserved_and_eviction() -> None:
    settings = NodeSettings(
        family="AL2023",
        region="r",
        kubelet=kubelet(
            kubeReserved={"cpu": "200m"},
            systemReserved={"memory": "1Gi"},
            evictionHard={"memory.available": "5%", "nodefs.available": "100%"},
            evictionSoft={"memory.available": "1Gi"},
            evictionSoftGracePeriod={"memory.available": "1m"},
        ),
    )
    it = instancetype.build(M5_LARGE, settings, OFFERINGS)
    assert it is not None
    assert it.overhead.kube_reserved["cpu"] == 200 and it.overhead.kube_reserved["memory"] == 574 * MI
    assert it.overhead.system_reserved == {"memory": GI}
    # The larger of hard (5% of 7577Mi) and soft (1Gi) wins; 100% disables the nodefs threshold.
    assert it.overhead.eviction_threshold == {"memory": GI, "ephemeral-storage": 0}


def test_ephemeral_storage_follows_raid0_root_volume_and_family_defaults() -> None:
    raid0 = NodeSettings(family="AL2023", region="r", instance_store_policy="RAID0")
    assert instancetype.ephemeral_storage(G4DN_XLARGE, raid0) == 125 * 10**9
    root = BlockDeviceMapping.model_validate(
        {"deviceName": "/dev/xvdz", "rootVolume": True, "ebs": {"volumeSize": "100Gi"}}
    )
    assert (
        instancetype.ephemeral_storage(
            M5_LARGE, NodeSettings(family="AL2023", region="r", block_device_mappings=(root,))
        )
        == 100 * GI
    )
    assert instancetype.ephemeral_storage(M5_LARGE, NodeSettings(family="Bottlerocket", region="r")) == 20 * GI
    assert instancetype.ephemeral_storage(M5_LARGE, NodeSettings(family="Windows2019", region="r")) == 50 * GI
    last = BlockDeviceMapping.model_validate({"deviceName": "/dev/sdb", "ebs": {"volumeSize": "40G"}})
    assert (
        instancetype.ephemeral_storage(
            M5_LARGE, NodeSettings(family="Custom", region="r", block_device_mappings=(last,))
        )
        == 40 * 10**9
    )


def test_windows_only_runs_on_amd64_with_its_build_label() -> None:
    windows = NodeSettings(family="Windows2022", region="r")
    it = instancetype.build(M5_LARGE, windows, OFFERINGS)
    assert it is not None and it.labels[wk.LABEL_OS] == "windows"
    assert it.labels[wk.LABEL_WINDOWS_BUILD] == "10.0.20348"
    assert instancetype.build(C6G_XLARGE, windows, OFFERINGS) is None


def test_vm_memory_overhead_is_configurable() -> None:
    assert instancetype.memory(M5_LARGE, 0.0) == 8192 * MI
    assert instancetype.memory(M5_LARGE, 0.1) == (8192 - 820) * MI


def test_metal_sizes_are_labelled() -> None:
    it = instancetype.build(M5_METAL, AL2023, OFFERINGS)
    assert it is not None and it.labels[wk.LABEL_INSTANCE_SIZE] == "metal"
