"""AL2 user data: MIME with the user's parts first, then a script running ``/etc/eks/bootstrap.sh``. Pure."""

from __future__ import annotations

import ipaddress

from autoscaler.providers.aws.userdata import mime
from autoscaler.providers.aws.userdata.options import BootstrapOptions, is_mime, kubelet_flags


def _is_ipv6(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).version == 6
    except ValueError:
        return False


def bootstrap_script(options: BootstrapOptions) -> str:
    """The shell script; bootstrap.sh takes its arguments space-separated, never with ``=``."""
    cluster, kubelet = options.cluster, options.kubelet
    command = f"/etc/eks/bootstrap.sh '{cluster.name}' --apiserver-endpoint '{cluster.endpoint}'"
    if cluster.ca_bundle:
        command += f" --b64-cluster-ca '{cluster.ca_bundle}'"
    arguments = [command]
    dns = kubelet.cluster_dns[0] if kubelet.cluster_dns else None
    if dns and _is_ipv6(dns):
        arguments.append("--ip-family ipv6")
    if dns:
        arguments.append(f"--dns-cluster-ip '{dns}'")
    # Karpenter computes max pods itself (ENI-limited or from the class), so bootstrap.sh must not.
    arguments.append("--use-max-pods false")
    flags = kubelet_flags(options)
    if flags:
        arguments.append(f"--kubelet-extra-args '{' '.join(flags)}'")
    if options.raid0:
        arguments.append("--local-disks raid0")
    return (
        "#!/bin/bash -xe\n"
        "exec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1\n" + " \\\n".join(arguments)
    )


def render(options: BootstrapOptions) -> str:
    parts: list[mime.Part] = []
    custom = options.custom_user_data
    if custom:
        parts.extend(mime.parse(custom) if is_mime(custom) else [mime.Part.of(mime.SHELL_SCRIPT, custom)])
    parts.append(mime.Part.of(mime.SHELL_SCRIPT, bootstrap_script(options)))
    return mime.serialize(parts)
