"""Launch template goldens for node shapes: EFA interfaces, listed network interfaces with prefixes and
connection tracking, CPU options and volume initialization rates, placement groups, IPv6 prefixes (regenerate
with UPDATE_GOLDEN=1 and review the diff). Pure."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest

from autoscaler.apis.v1.ec2nodeclass import (
    BlockDevice,
    BlockDeviceMapping,
    ConnectionTracking,
    CPUOptions,
    NetworkInterface,
)
from autoscaler.providers.aws.launchconfig import LaunchConfig, launch_template_data
from tests.unit.providers.aws.test_launchconfig import CONFIG

GOLDEN = Path(__file__).parent / "golden"
NICS = (
    NetworkInterface(networkCardIndex=0, deviceIndex=0, interfaceType="interface"),
    NetworkInterface(networkCardIndex=1, deviceIndex=0, interfaceType="efa-only"),
)
CASES: dict[str, LaunchConfig] = {
    "lt_efa_prefixes": dataclasses.replace(CONFIG, efa_count=2, ip_prefix_count=4),
    "lt_interfaces_tracking": dataclasses.replace(
        CONFIG,
        network_interfaces=NICS,
        ip_prefix_count=2,
        associate_public_ip_address=False,
        connection_tracking=ConnectionTracking(tcpEstablishedTimeout=3600, udpTimeout=30),
    ),
    "lt_cpu_volume_init": dataclasses.replace(
        CONFIG,
        cpu_options=CPUOptions(nestedVirtualization="enabled"),
        block_device_mappings=(
            BlockDeviceMapping(
                deviceName="/dev/xvda",
                ebs=BlockDevice(snapshotID="snap-1", volumeSize="40Gi", volumeInitializationRate=200),
            ),
        ),
    ),
    "lt_prefix_only": dataclasses.replace(CONFIG, ip_prefix_count=1),
    # An ML class: EFA on every card of the type, in a cluster placement group.
    "lt_placement_efa": dataclasses.replace(CONFIG, efa_count=2, placement_group_id="pg-0123456789abcdef0"),
    "lt_ipv6_prefixes": dataclasses.replace(CONFIG, ip_prefix_count=2, ipv6=True),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_launch_template_matches_golden(case: str) -> None:
    data = launch_template_data(CASES[case])
    data.pop("UserData")
    rendered = json.dumps(data, indent=2, sort_keys=True) + "\n"
    golden = GOLDEN / f"{case}.json"
    if os.environ.get("UPDATE_GOLDEN"):
        golden.write_text(rendered)
    assert rendered == golden.read_text()


def test_efa_only_interfaces_take_no_prefixes_public_ip_or_tracking() -> None:
    interfaces = launch_template_data(CASES["lt_interfaces_tracking"])["NetworkInterfaces"]
    efa_only = next(i for i in interfaces if i["InterfaceType"] == "efa-only")
    assert efa_only == {
        "NetworkCardIndex": 1,
        "DeviceIndex": 0,
        "InterfaceType": "efa-only",
        "Groups": ["sg-1", "sg-2"],
    }
    primary = next(i for i in interfaces if i["InterfaceType"] == "interface")
    assert primary["Ipv4PrefixCount"] == 2 and primary["ConnectionTrackingSpecification"]["UdpTimeout"] == 30


def test_plain_class_sends_no_interfaces_or_cpu_options() -> None:
    data = launch_template_data(CONFIG)
    assert "NetworkInterfaces" not in data and "CpuOptions" not in data and data["SecurityGroupIds"] == ["sg-1", "sg-2"]


def test_a_placement_group_is_named_by_id_and_leaves_the_partition_to_ec2() -> None:
    placement = launch_template_data(CASES["lt_placement_efa"])["Placement"]
    assert placement == {"GroupId": "pg-0123456789abcdef0"}
    assert "Placement" not in launch_template_data(CONFIG)


def test_an_ipv6_cluster_gets_ipv6_prefixes_and_a_primary_ipv6_address() -> None:
    (primary,) = launch_template_data(CASES["lt_ipv6_prefixes"])["NetworkInterfaces"]
    assert primary["Ipv6PrefixCount"] == 2 and "Ipv4PrefixCount" not in primary
    assert primary["PrimaryIpv6"] is True and primary["Ipv6AddressCount"] == 1
    (v4,) = launch_template_data(CASES["lt_prefix_only"])["NetworkInterfaces"]
    assert v4["Ipv4PrefixCount"] == 1 and "PrimaryIpv6" not in v4
