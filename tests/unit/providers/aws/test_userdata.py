"""User data per AMI family, checked against golden files (regenerate with UPDATE_GOLDEN=1 and review
the diff: these files are what nodes boot with)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import tomlkit
import yaml

from autoscaler.apis.v1.common import Taint
from autoscaler.apis.v1.ec2nodeclass import AMIFamily
from autoscaler.apis.v1.kubelet import KubeletConfiguration
from autoscaler.providers.aws import userdata
from autoscaler.providers.aws.userdata import mime
from autoscaler.providers.aws.userdata.options import BootstrapOptions, ClusterInfo, UserDataError

GOLDEN = Path(__file__).parent / "golden"
CLUSTER = ClusterInfo("demo", "https://ABC.gr7.us-west-2.eks.amazonaws.com", "Y2VydGlmaWNhdGU=", "10.100.0.0/16")
KUBELET = KubeletConfiguration.model_validate(
    {
        "maxPods": 29,
        "clusterDNS": ["10.100.0.10"],
        "systemReserved": {"cpu": "100m", "memory": "100Mi"},
        "kubeReserved": {"memory": "300Mi", "cpu": "80m"},
        "evictionHard": {"memory.available": "5%"},
        "evictionSoft": {"memory.available": "10%"},
        "evictionSoftGracePeriod": {"memory.available": "90s"},
        "imageGCHighThresholdPercent": 85,
        "imageGCLowThresholdPercent": 80,
        "cpuCFSQuota": True,
    }
)
TAINTS = (
    Taint(key="dedicated", value="gpu", effect="NoSchedule"),
    Taint(key="karpenter.sh/unregistered", effect="NoExecute"),
)
LABELS = {"karpenter.sh/nodepool": "default", "karpenter.sh/capacity-type": "spot", "team": "ml"}

USER_MIME = """MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="BOUNDARY"

--BOUNDARY
Content-Type: text/x-shellscript; charset="us-ascii"

#!/bin/bash
echo "user part"

--BOUNDARY--
"""
USER_SHELL = '#!/bin/bash\necho "hello from the user"\n'
USER_NODECONFIG = """apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  kubelet:
    config:
      shutdownGracePeriod: 30s
"""
USER_TOML = """# user settings
[settings.kubernetes]
cluster-name = "the-user-wins-not"
allowed-unsafe-sysctls = ["net.core.somaxconn"]

[settings.host-containers.admin]
enabled = true
"""


def options(custom: str | None = None, raid0: bool = False) -> BootstrapOptions:
    return BootstrapOptions(CLUSTER, KUBELET, TAINTS, LABELS, custom, "RAID0" if raid0 else None)


CASES: dict[str, tuple[AMIFamily, BootstrapOptions]] = {
    "al2_plain": ("AL2", options()),
    "al2_user_mime_raid0": ("AL2", options(USER_MIME, raid0=True)),
    "al2_user_shell": ("AL2", options(USER_SHELL)),
    "al2023_plain": ("AL2023", options()),
    "al2023_user_mime": ("AL2023", options(USER_MIME)),
    "al2023_user_shell": ("AL2023", options(USER_SHELL)),
    "al2023_user_nodeconfig_raid0": ("AL2023", options(USER_NODECONFIG, raid0=True)),
    "bottlerocket_plain": ("Bottlerocket", options()),
    "bottlerocket_user_toml": ("Bottlerocket", options(USER_TOML)),
    "windows2022_user_script": ("Windows2022", options("Write-Host 'user'")),
    "custom": ("Custom", options("#!/bin/bash\nmy-own-bootstrap\n")),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_user_data_matches_golden(case: str) -> None:
    family, opts = CASES[case]
    rendered = userdata.render(family, opts)
    golden = GOLDEN / f"{case}.txt"
    if os.environ.get("UPDATE_GOLDEN"):
        golden.write_text(rendered)
    assert rendered == golden.read_text()


def test_al2_puts_the_users_parts_first_and_passes_bootstrap_arguments() -> None:
    parts = mime.parse(userdata.render("AL2", options(USER_MIME, raid0=True)))
    assert [p.content_type for p in parts] == [mime.SHELL_SCRIPT, mime.SHELL_SCRIPT]
    assert 'echo "user part"' in parts[0].body
    script = parts[1].body
    for expected in (
        "/etc/eks/bootstrap.sh 'demo' --apiserver-endpoint 'https://ABC.gr7.us-west-2.eks.amazonaws.com'",
        "--b64-cluster-ca 'Y2VydGlmaWNhdGU='",
        "--dns-cluster-ip '10.100.0.10'",
        "--use-max-pods false",
        '--register-with-taints="dedicated=gpu:NoSchedule,karpenter.sh/unregistered:NoExecute"',
        '--node-labels="karpenter.sh/capacity-type=spot,karpenter.sh/nodepool=default,team=ml"',
        "--max-pods=29",
        '--eviction-soft-grace-period="memory.available=1m30s"',
        "--local-disks raid0",
    ):
        assert expected in script


def test_al2023_node_config_comes_last_and_carries_the_kubelet_settings() -> None:
    parts = mime.parse(userdata.render("AL2023", options(USER_NODECONFIG, raid0=True)))
    assert [p.content_type for p in parts] == [mime.NODE_CONFIG, mime.NODE_CONFIG]
    ours = yaml.safe_load(parts[1].body)
    assert ours["spec"]["cluster"] == {
        "apiServerEndpoint": CLUSTER.endpoint,
        "certificateAuthority": CLUSTER.ca_bundle,
        "cidr": "10.100.0.0/16",
        "name": "demo",
    }
    config = ours["spec"]["kubelet"]["config"]
    assert config["maxPods"] == 29 and config["clusterDNS"] == ["10.100.0.10"]
    assert config["registerWithTaints"] == [
        {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
        {"key": "karpenter.sh/unregistered", "effect": "NoExecute"},
    ]
    assert ours["spec"]["instance"] == {"localStorage": {"strategy": "RAID0"}}
    assert ours["spec"]["kubelet"]["flags"] == [
        '--node-labels="karpenter.sh/capacity-type=spot,karpenter.sh/nodepool=default,team=ml"'
    ]


def test_al2023_wraps_a_shell_script_as_a_shell_part() -> None:
    parts = mime.parse(userdata.render("AL2023", options(USER_SHELL)))
    assert [p.content_type for p in parts] == [mime.SHELL_SCRIPT, mime.NODE_CONFIG]
    assert parts[0].body.strip() == USER_SHELL.strip()


def test_al2023_without_the_service_cidr_is_an_error_naming_it() -> None:
    missing = BootstrapOptions(ClusterInfo("demo", "https://x"), KUBELET, TAINTS, LABELS)
    with pytest.raises(UserDataError, match="service CIDR"):
        userdata.render("AL2023", missing)


def test_bottlerocket_keeps_the_users_settings_and_overrides_ours() -> None:
    rendered = tomlkit.parse(userdata.render("Bottlerocket", options(USER_TOML)))
    kubernetes = rendered["settings"]["kubernetes"]  # type: ignore[index]
    assert kubernetes["cluster-name"] == "demo"  # type: ignore[index]
    assert kubernetes["allowed-unsafe-sysctls"] == ["net.core.somaxconn"]  # type: ignore[index]
    assert rendered["settings"]["host-containers"]["admin"]["enabled"] is True  # type: ignore[index]
    assert kubernetes["node-taints"] == {"dedicated": ["gpu:NoSchedule"], "karpenter.sh/unregistered": [":NoExecute"]}  # type: ignore[index]
    assert kubernetes["max-pods"] == 29 and kubernetes["cluster-dns-ip"] == "10.100.0.10"  # type: ignore[index]
    assert kubernetes["image-gc-high-threshold-percent"] == "85"  # type: ignore[index]
    assert kubernetes["cpu-cfs-quota-enforced"] is True  # type: ignore[index]
    assert kubernetes["kube-reserved"] == {"cpu": "80m", "memory": "300Mi"}  # type: ignore[index]


@pytest.mark.parametrize(
    ("family", "custom", "message"),
    [
        ("Bottlerocket", "[settings\nbroken", "not valid TOML"),
        ("Bottlerocket", "settings = 1", "'settings' must be a table"),
        ("AL2", "MIME-Version: 1.0\nContent-Type: text/plain\n\nhello", "must be multipart"),
        ("AL2023", "Content-Type: multipart/mixed\n\n--x--", "not valid MIME"),
    ],
)
def test_user_data_that_cannot_be_merged_is_a_clear_error(family: AMIFamily, custom: str, message: str) -> None:
    with pytest.raises(UserDataError, match=message):
        userdata.render(family, options(custom))


def test_windows_and_custom() -> None:
    windows = userdata.render("Windows2022", options("Write-Host 'user'"))
    assert windows.startswith("<powershell>\nWrite-Host 'user'\n") and windows.endswith("</powershell>")
    assert "-EKSClusterName 'demo'" in windows and "-DNSClusterIP '10.100.0.10'" in windows
    assert userdata.render("Custom", options("exact bytes")) == "exact bytes"
    assert userdata.render("Custom", options()) == ""


def test_the_dns_address_is_the_tenth_of_the_service_cidr() -> None:
    assert ClusterInfo("c", "e", service_cidr="172.20.0.0/16").dns_ip == "172.20.0.10"
    assert ClusterInfo("c", "e", service_cidr="fd00:10:96::/108").dns_ip == "fd00:10:96::a"
    assert ClusterInfo("c", "e").dns_ip is None
