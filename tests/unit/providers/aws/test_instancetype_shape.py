"""Node shapes in instance types, as Karpenter v1.14.1 computes them: EFA devices from the class's
interfaces, ENI-limited pods less EFA-only interfaces on card 0, and the node class compatibility checks."""

from __future__ import annotations

import dataclasses

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.ec2nodeclass import NetworkInterface
from autoscaler.cloudprovider.types import Offering
from autoscaler.providers.aws import instancetype
from autoscaler.providers.aws.instancetype import NodeSettings
from tests.unit.providers.aws.samples import info

AL2023 = NodeSettings(family="AL2023", region="us-west-2")
OFFERINGS = (Offering("us-west-2a", "on-demand", 1.0),)
P5 = info(
    "p5.48xlarge",
    192,
    2097152,
    enis=4,
    ips_per_eni=50,
    EnaSupport="required",
    ProcessorInfo={"SupportedArchitectures": ["x86_64"], "SupportedFeatures": ["nested-virtualization"]},
)
P5["NetworkInfo"]["EfaInfo"] = {"MaximumEfaInterfaces": 2}
P5["NetworkInfo"]["NetworkCards"].append({"NetworkCardIndex": 1, "MaximumNetworkInterfaces": 2})


def nic(card: int, device: int, kind: str) -> NetworkInterface:
    return NetworkInterface(networkCardIndex=card, deviceIndex=device, interfaceType=kind)  # type: ignore[arg-type]


def test_efa_capacity_is_the_types_unless_the_class_lists_interfaces() -> None:
    assert instancetype.capacity(P5, AL2023)[wk.RESOURCE_EFA] == 2
    listed = dataclasses.replace(AL2023, network_interfaces=(nic(0, 0, "interface"), nic(1, 0, "efa-only")))
    assert instancetype.capacity(P5, listed)[wk.RESOURCE_EFA] == 1
    no_efa = dataclasses.replace(AL2023, network_interfaces=(nic(0, 0, "interface"),))
    assert wk.RESOURCE_EFA not in instancetype.capacity(P5, no_efa)


def test_efa_only_on_the_default_card_takes_an_eni_slot() -> None:
    assert instancetype.eni_limited_pods(P5) == 4 * 49 + 2
    on_card0 = (nic(0, 0, "interface"), nic(0, 1, "efa-only"))
    assert instancetype.eni_limited_pods(P5, 0, on_card0) == 3 * 49 + 2
    on_card1 = (nic(0, 0, "interface"), nic(1, 0, "efa-only"))
    assert instancetype.eni_limited_pods(P5, 0, on_card1) == 4 * 49 + 2


def test_compatibility_with_interfaces_cpu_options_and_connection_tracking() -> None:
    plain = info("m5.large", 2, 8192, ProcessorInfo={"SupportedArchitectures": ["x86_64"]}, Hypervisor="xen")
    two_cards = dataclasses.replace(AL2023, network_interfaces=(nic(0, 0, "interface"), nic(1, 0, "efa-only")))
    assert instancetype.build(P5, two_cards, OFFERINGS) is not None
    assert instancetype.build(plain, two_cards, OFFERINGS) is None  # no second card, no EFA
    nested = dataclasses.replace(AL2023, nested_virtualization=True)
    assert instancetype.build(P5, nested, OFFERINGS) is not None
    assert instancetype.build(plain, nested, OFFERINGS) is None
    tracking = dataclasses.replace(AL2023, connection_tracking=True)
    assert instancetype.build(P5, tracking, OFFERINGS) is not None
    assert instancetype.build(plain, tracking, OFFERINGS) is None  # Xen, not Nitro
