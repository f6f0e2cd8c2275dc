"""Windows user data: ``<powershell>`` with the user's script, then ``Start-EKSBootstrap.ps1``. Pure."""

from __future__ import annotations

from autoscaler.providers.aws.userdata.options import BootstrapOptions, kubelet_flags


def render(options: BootstrapOptions) -> str:
    cluster = options.cluster
    lines = ["<powershell>"]
    if options.custom_user_data:
        lines.append(options.custom_user_data.rstrip("\n"))
    lines.append('[string]$EKSBootstrapScriptFile = "$env:ProgramFiles\\Amazon\\EKS\\Start-EKSBootstrap.ps1"')
    command = f"& $EKSBootstrapScriptFile -EKSClusterName '{cluster.name}' -APIServerEndpoint '{cluster.endpoint}'"
    if cluster.ca_bundle:
        command += f" -Base64ClusterCA '{cluster.ca_bundle}'"
    flags = kubelet_flags(options)
    if flags:
        command += f" -KubeletExtraArgs '{' '.join(flags)}'"
    if options.kubelet.cluster_dns:
        command += f" -DNSClusterIP '{options.kubelet.cluster_dns[0]}'"
    lines.append(command)
    lines.append("</powershell>")
    return "\n".join(lines)
