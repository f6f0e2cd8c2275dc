"""The node-shape parts of launch template data, as Karpenter v1.14.1 builds them: network interfaces
(``spec.networkInterfaces``, EFA, ``ipPrefixCount``, ``connectionTracking``) and CPU options. Pure;
``launchconfig`` calls it with what a launch configuration fixes."""

from __future__ import annotations

from typing import Any

from autoscaler.apis.v1.ec2nodeclass import ConnectionTracking, CPUOptions, NetworkInterface

EFA_ONLY = "efa-only"


def connection_tracking(spec: ConnectionTracking | None) -> dict[str, int] | None:
    """``ConnectionTrackingSpecification``, or None when nothing is set."""
    if spec is None:
        return None
    fields = {
        "TcpEstablishedTimeout": spec.tcp_established_timeout,
        "UdpStreamTimeout": spec.udp_stream_timeout,
        "UdpTimeout": spec.udp_timeout,
    }
    sent = {key: value for key, value in fields.items() if value is not None}
    return sent or None


def cpu_options(spec: CPUOptions | None) -> dict[str, str] | None:
    """``CpuOptions`` carries only nested virtualization, and only when the class sets it."""
    if spec is None or spec.nested_virtualization is None:
        return None
    return {"NestedVirtualization": spec.nested_virtualization}


def network_interfaces(
    *,
    configured: tuple[NetworkInterface, ...] | None,
    efa_count: int,
    groups: list[str],
    public_ip: bool | None,
    ip_prefix_count: int | None,
    tracking: dict[str, int] | None,
    ipv6: bool = False,
) -> list[dict[str, Any]]:
    """``NetworkInterfaces``: the class's interfaces when it lists any, else one EFA interface per network
    card for a claim requesting EFA, else the primary interface when something must be said about it
    (public IP, prefixes, connection tracking); else none (security groups go on the template then).
    EFA-only interfaces take no prefixes, public IP or connection tracking (EC2 refuses them there). On an IPv6
    cluster every other interface gets a primary IPv6 address, and the prefixes are IPv6 ones."""

    def common(ip_capable: bool) -> dict[str, Any]:
        if not ip_capable:
            return {"Groups": groups}
        entry: dict[str, Any] = {"Groups": groups}
        if public_ip is not None:
            entry["AssociatePublicIpAddress"] = public_ip
        if ip_prefix_count is not None:
            entry["Ipv6PrefixCount" if ipv6 else "Ipv4PrefixCount"] = ip_prefix_count
        if ipv6:
            entry |= {"PrimaryIpv6": True, "Ipv6AddressCount": 1}
        if tracking:
            entry["ConnectionTrackingSpecification"] = tracking
        return entry

    if configured:
        return [
            {"NetworkCardIndex": n.network_card_index, "DeviceIndex": n.device_index, "InterfaceType": n.interface_type}
            | common(n.interface_type != EFA_ONLY)
            for n in configured
        ]
    if efa_count:
        # Card 0 keeps device index 0 so one card outranks the others (a public IP lands there).
        return [
            {"NetworkCardIndex": i, "DeviceIndex": 0 if i == 0 else 1, "InterfaceType": "efa"} | common(True)
            for i in range(efa_count)
        ]
    primary = common(True)
    if len(primary) > 1:
        return [{"DeviceIndex": 0} | primary]
    return []
