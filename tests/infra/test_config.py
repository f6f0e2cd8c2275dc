"""Context parsing: every setting has a default or a clear error naming the key. No synth needed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from infra.config import DEFAULT_SCHEDULE_MINUTES, AppConfig, ConfigError, Networking


def config(**context: Any) -> AppConfig:
    return AppConfig.from_context(context.get)


def test_defaults() -> None:
    cfg = config(clusterName="demo")
    assert cfg.cluster_name == "demo"
    assert cfg.node_role_arn is None
    assert cfg.node_role_name == "KarpenterNodeRole-demo"
    assert cfg.networking is None
    assert (cfg.architecture, cfg.python_version) == ("arm64", "3.13")
    assert cfg.schedule_minutes == {
        "provisioner": 1,
        "termination": 1,
        "disruption": 5,
        "garbage_collection": 2,
        "nodeclass": 5,
    }
    assert cfg.log_retention_days == 30
    assert cfg.alarm_email is None
    assert (cfg.vm_memory_overhead_percent, cfg.reserved_enis, cfg.isolated_vpc) == (0.075, 0, False)
    assert cfg.enable_zonal_shift is False  # Karpenter's default
    assert (cfg.snap_start, cfg.controllers_enabled, cfg.conversion_reserved_concurrency) == (True, True, 5)
    assert config(clusterName="demo", conversionReservedConcurrency="none").conversion_reserved_concurrency is None


def test_feature_gates_are_karpenters_with_its_defaults() -> None:
    gates = config(clusterName="demo").feature_gates
    assert gates.to_flag() == (
        "NodeRepair=false,ReservedCapacity=true,SpotToSpotConsolidation=false,NodeOverlay=false,"
        "StaticCapacity=false,CapacityBuffer=false"
    )
    chosen = config(clusterName="demo", featureGates="StaticCapacity=true, ReservedCapacity=false").feature_gates
    assert (chosen.static_capacity, chosen.reserved_capacity, chosen.node_repair) == (True, False, False)
    # the older flag still sets its gate, and wins over featureGates
    both = config(clusterName="demo", featureGates="SpotToSpotConsolidation=false", spotToSpotConsolidation="true")
    assert both.feature_gates.spot_to_spot_consolidation is True


def test_cli_strings_and_cdk_json_values_are_both_accepted() -> None:
    from_cli = config(
        clusterName="prod",
        subnetIds="subnet-0123456789abcdef0, subnet-0fedcba9876543210",
        vpcId="vpc-0123456789abcdef0",
        scheduleMinutes='{"disruption": 10, "nodeclass": 15}',
        logRetentionDays="7",
        isolatedVpc="TRUE",
        reservedEnis="1",
        vmMemoryOverheadPercent="0.1",
    )
    from_json = config(
        clusterName="prod",
        subnetIds=["subnet-0123456789abcdef0", "subnet-0fedcba9876543210"],
        vpcId="vpc-0123456789abcdef0",
        scheduleMinutes={"disruption": 10, "nodeclass": 15},
        logRetentionDays=7,
        isolatedVpc=True,
        reservedEnis=1,
        vmMemoryOverheadPercent=0.1,
    )
    assert from_cli == from_json
    assert from_cli.networking == Networking(
        vpc_id="vpc-0123456789abcdef0", subnet_ids=("subnet-0123456789abcdef0", "subnet-0fedcba9876543210")
    )
    assert from_cli.schedule_minutes == {**DEFAULT_SCHEDULE_MINUTES, "disruption": 10, "nodeclass": 15}


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ({}, "clusterName is required"),
        ({"clusterName": "  "}, "clusterName is required"),
        ({"clusterName": "-bad"}, "not a valid EKS cluster name"),
        ({"clusterName": "c" * 50}, "exceeds IAM's 64 characters"),
        ({"clusterName": "demo", "nodeRoleArn": "KarpenterNodeRole"}, "not an IAM role ARN"),
        ({"clusterName": "demo", "architecture": "arm"}, "architecture must be one of arm64, x86_64"),
        ({"clusterName": "demo", "pythonVersion": "3.11"}, "pythonVersion must be one of 3.12, 3.13, 3.14"),
        ({"clusterName": "demo", "subnetIds": "subnet-0123456789abcdef0"}, "need vpcId"),
        ({"clusterName": "demo", "vpcId": "vpc-0123456789abcdef0"}, "needs subnetIds"),
        ({"clusterName": "demo", "vpcId": "vpc-1", "subnetIds": "subnet-0123456789abcdef0"}, "is not a VPC ID"),
        ({"clusterName": "demo", "vpcId": "vpc-0123456789abcdef0", "subnetIds": "sub-1"}, "malformed IDs: sub-1"),
        ({"clusterName": "demo", "scheduleMinutes": "{disruption: 5}"}, "scheduleMinutes is not JSON"),
        ({"clusterName": "demo", "scheduleMinutes": '{"sweeper": 5}'}, "unknown functions ['sweeper']"),
        (
            {"clusterName": "demo", "scheduleMinutes": '{"disruption": 0}'},
            "scheduleMinutes.disruption must be whole minutes",
        ),
        (
            {"clusterName": "demo", "scheduleMinutes": '{"disruption": true}'},
            "scheduleMinutes.disruption must be whole minutes",
        ),
        ({"clusterName": "demo", "logRetentionDays": "10"}, "logRetentionDays must be one of CloudWatch's periods"),
        ({"clusterName": "demo", "logRetentionDays": "a week"}, "logRetentionDays must be a whole number"),
        ({"clusterName": "demo", "alarmEmail": "oncall"}, "not an e-mail address"),
        ({"clusterName": "demo", "clusterEndpoint": "http://x"}, "must be an https:// URL"),
        ({"clusterName": "demo", "vmMemoryOverheadPercent": "7.5"}, "fraction in [0, 1)"),
        ({"clusterName": "demo", "reservedEnis": "-1"}, "reservedEnis must not be negative"),
        ({"clusterName": "demo", "isolatedVpc": "yes"}, "isolatedVpc must be true or false"),
        ({"clusterName": "demo", "snapStart": "off"}, "snapStart must be true or false"),
        ({"clusterName": "demo", "controllersEnabled": "no"}, "controllersEnabled must be true or false"),
        ({"clusterName": "demo", "conversionReservedConcurrency": "0"}, "at least 1, or none"),
        ({"clusterName": "demo", "conversionReservedConcurrency": "many"}, "must be a whole number"),
        ({"clusterName": "demo", "forwarderNamespace": "Kube_System"}, "not a valid Kubernetes name"),
        ({"clusterName": "demo", "forwarderArchitecture": "amd64"}, "forwarderArchitecture must be one of arm64"),
        (
            {"clusterName": "demo", "forwarderOidcIssuer": "https://token.actions.githubusercontent.com"},
            "forwarderOidcIssuer 'token.actions.githubusercontent.com' is not an EKS OIDC issuer",
        ),
        ({"clusterName": 42}, "clusterName must be a string"),
        (
            {"clusterName": "demo", "featureGates": "StaticCapacity=on"},
            "featureGates: FEATURE_GATES: 'StaticCapacity=on'",
        ),
        ({"clusterName": "demo", "spotToSpotConsolidation": "yes"}, "spotToSpotConsolidation must be true or false"),
    ],
)
def test_bad_context_is_refused_with_a_specific_message(context: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as error:
        config(**context)
    assert message in str(error.value)


def test_long_cluster_names_work_with_an_existing_node_role() -> None:
    cfg = config(clusterName="c" * 60, nodeRoleArn="arn:aws:iam::123456789012:role/nodes")
    assert cfg.node_role_arn == "arn:aws:iam::123456789012:role/nodes"


def test_paths_can_be_redirected(tmp_path: Path) -> None:
    cfg = config(clusterName="demo", layersDir=str(tmp_path), functionsDir=str(tmp_path / "f"))
    assert (cfg.layers_dir, cfg.functions_dir) == (tmp_path, tmp_path / "f")
