"""Launch template data, naming and tags; drift comparisons; the families' SSM parameters. Pure."""

from __future__ import annotations

import base64
import dataclasses

import pytest

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.ec2nodeclass import (
    AMIRequirement,
    AMIStatus,
    BlockDeviceMapping,
    MetadataOptions,
    SecurityGroupStatus,
    SubnetStatus,
)
from autoscaler.cloudprovider.types import Reservation
from autoscaler.providers.aws import drift, families
from autoscaler.providers.aws.launchconfig import (
    LaunchConfig,
    launch_tags,
    launch_template_data,
    launch_template_tags,
    volume_size_gib,
)

TAGS = launch_tags("demo", "default", "nodes", {"team": "a"})
CONFIG = LaunchConfig(
    cluster_name="demo",
    nodeclass_name="nodes",
    image_id="ami-1",
    user_data="#!/bin/bash\n",
    instance_profile="demo_1",
    security_group_ids=("sg-1", "sg-2"),
    block_device_mappings=families.traits("AL2023").default_block_devices,
    metadata_options=MetadataOptions(),
    detailed_monitoring=False,
    associate_public_ip_address=None,
    tags=tuple(sorted(TAGS.items())),
    capacity_type="on-demand",
)


def test_launch_tags_are_exactly_ours_plus_the_class_tags() -> None:
    assert TAGS == {
        "team": "a",
        "kubernetes.io/cluster/demo": "owned",
        wk.TAG_NODEPOOL: "default",
        wk.TAG_CLUSTER_NAME: "demo",
        wk.TAG_NODECLASS: "nodes",
    }
    assert "karpenter.sh/managed-by" not in TAGS
    assert launch_template_tags(CONFIG) == {**TAGS, wk.TAG_LAUNCH_TEMPLATE_CLUSTER: "demo"}


def test_template_data_defaults() -> None:
    data = launch_template_data(CONFIG)
    assert data["MetadataOptions"] == {
        "HttpEndpoint": "enabled",
        "HttpProtocolIpv6": "disabled",
        "HttpPutResponseHopLimit": 1,
        "HttpTokens": "required",
    }
    assert base64.b64decode(data["UserData"]) == b"#!/bin/bash\n"
    assert data["SecurityGroupIds"] == ["sg-1", "sg-2"] and "NetworkInterfaces" not in data
    assert data["BlockDeviceMappings"] == [
        {"DeviceName": "/dev/xvda", "Ebs": {"Encrypted": True, "VolumeType": "gp3", "VolumeSize": 20}}
    ]
    assert [s["ResourceType"] for s in data["TagSpecifications"]] == ["network-interface"]
    spot = launch_template_data(dataclasses.replace(CONFIG, capacity_type="spot"))
    assert [s["ResourceType"] for s in spot["TagSpecifications"]] == ["network-interface", "spot-instances-request"]


TARGETED = {
    "CapacityReservationPreference": "capacity-reservations-only",
    "CapacityReservationTarget": {"CapacityReservationId": "cr-1"},
}
INTERRUPTIBLE = {"MarketType": "interruptible-capacity-reservation"}


@pytest.mark.parametrize(
    ("change", "reservations", "market"),
    [
        ({}, {"CapacityReservationPreference": "none"}, None),  # the gate on: out of open reservations
        ({"capacity_type": "spot"}, {"CapacityReservationPreference": "none"}, None),
        ({"open_reservations": True}, None, None),  # the gate off: EC2 may match the launch to an open one
        ({"reservation": Reservation("cr-1", "default")}, TARGETED, None),
        ({"reservation": Reservation("cr-1", "capacity-block")}, TARGETED, {"MarketType": "capacity-block"}),
        ({"reservation": Reservation("cr-1", "default", True)}, TARGETED, INTERRUPTIBLE),
    ],
)
def test_capacity_reservation_preference_and_market_follow_karpenters_targeted_launch_mode(
    change: dict[str, object], reservations: object, market: object
) -> None:
    data = launch_template_data(dataclasses.replace(CONFIG, **change))  # type: ignore[arg-type]
    assert data.get("CapacityReservationSpecification") == reservations
    assert data.get("InstanceMarketOptions") == market


@pytest.mark.parametrize("public", [True, False])
def test_public_ip_is_sent_only_when_the_class_sets_it(public: bool) -> None:
    data = launch_template_data(dataclasses.replace(CONFIG, associate_public_ip_address=public))
    assert data["NetworkInterfaces"] == [
        {"DeviceIndex": 0, "Groups": ["sg-1", "sg-2"], "AssociatePublicIpAddress": public}
    ]
    assert "SecurityGroupIds" not in data


def test_efa_interfaces() -> None:
    data = launch_template_data(dataclasses.replace(CONFIG, efa_count=2))
    assert [(i["NetworkCardIndex"], i["DeviceIndex"], i["InterfaceType"]) for i in data["NetworkInterfaces"]] == [
        (0, 0, "efa"),
        (1, 1, "efa"),
    ]
    assert all("AssociatePublicIpAddress" not in i for i in data["NetworkInterfaces"])


def test_names_follow_the_configuration() -> None:
    assert CONFIG.name == dataclasses.replace(CONFIG).name and CONFIG.name.startswith("karpenter.k8s.aws/")
    for change in ({"image_id": "ami-2"}, {"user_data": "x"}, {"associate_public_ip_address": False}):
        assert dataclasses.replace(CONFIG, **change).name != CONFIG.name  # type: ignore[arg-type]
    custom = BlockDeviceMapping.model_validate({"deviceName": "/dev/xvda", "ebs": {"volumeSize": "100Gi"}})
    assert dataclasses.replace(CONFIG, block_device_mappings=(custom,)).name != CONFIG.name


@pytest.mark.parametrize(("size", "gib"), [("20Gi", 20), ("100G", 94), ("1Ti", 1024), ("1500Mi", 2)])
def test_volume_sizes_round_up_to_gib(size: str, gib: int) -> None:
    assert volume_size_gib(size) == gib


ANNOTATED = {wk.ANNOTATION_NODECLASS_HASH: "1", wk.ANNOTATION_NODECLASS_HASH_VERSION: "sk-v1"}


def test_static_drift_only_compares_hashes_of_the_same_version() -> None:
    assert drift.static_drift(ANNOTATED, ANNOTATED) is None
    changed = drift.static_drift({**ANNOTATED, wk.ANNOTATION_NODECLASS_HASH: "2"}, ANNOTATED)
    assert changed is not None and changed.reason == drift.NODECLASS_DRIFT and "from 1 to 2" in changed.message
    assert drift.static_drift({**ANNOTATED, wk.ANNOTATION_NODECLASS_HASH_VERSION: "sk-v2"}, ANNOTATED) is None
    assert drift.static_drift(ANNOTATED, {}) is None


def test_ami_subnet_and_group_drift() -> None:
    amd64 = AMIRequirement(key=wk.LABEL_ARCH, operator="In", values=["amd64"])
    arm64 = AMIRequirement(key=wk.LABEL_ARCH, operator="In", values=["arm64"])
    amis = [AMIStatus(id="ami-x86", requirements=[amd64]), AMIStatus(id="ami-arm", requirements=[arm64])]
    labels = {wk.LABEL_ARCH: "amd64", wk.LABEL_INSTANCE_TYPE: "m5.large"}
    assert drift.ami_drift("ami-x86", labels, amis) is None
    found = drift.ami_drift("ami-arm", labels, amis)
    assert found is not None and found.reason == drift.AMI_DRIFT and "ami-x86" in found.message
    subnets = [SubnetStatus(id="subnet-1", zone="a")]
    assert drift.subnet_drift("subnet-1", subnets) is None
    assert drift.subnet_drift("subnet-2", subnets).reason == drift.SUBNET_DRIFT  # type: ignore[union-attr]
    groups = [SecurityGroupStatus(id="sg-1"), SecurityGroupStatus(id="sg-2")]
    assert drift.security_group_drift(["sg-2", "sg-1"], groups) is None
    assert drift.security_group_drift(["sg-1"], groups).reason == drift.SECURITY_GROUP_DRIFT  # type: ignore[union-attr]


def test_alias_parameters_per_family() -> None:
    al2023 = {p.path for p in families.alias_parameters("AL2023", "1.31", "latest")}
    assert "/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/nvidia/recommended/image_id" in al2023
    pinned = families.alias_parameters("AL2", "1.31", "v20240807")
    assert pinned[0].path == (
        "/aws/service/eks/optimized-ami/1.31/amazon-linux-2/amazon-eks-node-1.31-v20240807/image_id"
    )
    bottlerocket = {p.path for p in families.alias_parameters("Bottlerocket", "1.31", "v1.20.0")}
    assert "/aws/service/bottlerocket/aws-k8s-1.31-nvidia/arm64/1.20.0/image_id" in bottlerocket
    (windows,) = families.alias_parameters("Windows2025", "1.31", "latest")
    assert (
        windows.path == "/aws/service/ami-windows-latest/Windows_Server-2025-English-Core-EKS_Optimized-1.31/image_id"
    )
    assert families.alias_parameters("Custom", "1.31", "latest") == []
