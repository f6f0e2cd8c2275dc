"""The deployment's settings, read from CDK context (`cdk.json` or `cdk synth -c key=value`).

Everything here is resolved offline: no AWS lookups at synth time, so `cdk synth` runs in CI without credentials.
Values given with `-c` arrive as strings; values in `cdk.json` may be typed. Both are accepted.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from autoscaler.routing import DEFAULT_SCHEDULE_MINUTES
from autoscaler.settings import FeatureGates, SettingsError

REPO_ROOT = Path(__file__).resolve().parents[1]


ARCHITECTURES = ("arm64", "x86_64")
PYTHON_VERSIONS = ("3.12", "3.13", "3.14")  # the Lambda Python runtimes that support SnapStart
# CloudWatch Logs' retention periods, in days, by their aws_logs.RetentionDays member name.
LOG_RETENTION: Mapping[int, str] = {
    1: "ONE_DAY",
    3: "THREE_DAYS",
    5: "FIVE_DAYS",
    7: "ONE_WEEK",
    14: "TWO_WEEKS",
    30: "ONE_MONTH",
    60: "TWO_MONTHS",
    90: "THREE_MONTHS",
    120: "FOUR_MONTHS",
    150: "FIVE_MONTHS",
    180: "SIX_MONTHS",
    365: "ONE_YEAR",
    400: "THIRTEEN_MONTHS",
    545: "EIGHTEEN_MONTHS",
    731: "TWO_YEARS",
    1096: "THREE_YEARS",
    1827: "FIVE_YEARS",
    2192: "SIX_YEARS",
    2557: "SEVEN_YEARS",
    2922: "EIGHT_YEARS",
    3288: "NINE_YEARS",
    3653: "TEN_YEARS",
}
FORWARDER_MODES = ("in-cluster", "none")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")

_CLUSTER_NAME = re.compile(r"^[0-9A-Za-z][A-Za-z0-9\-_]{0,99}$")
_ROLE_ARN = re.compile(r"^arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]+$")
_VPC_ID = re.compile(r"^vpc-[0-9a-f]{8,17}$")
_SUBNET_ID = re.compile(r"^subnet-[0-9a-f]{8,17}$")
_SECURITY_GROUP_ID = re.compile(r"^sg-[0-9a-f]{8,17}$")
_K8S_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_OIDC_ISSUER = re.compile(r"^oidc\.eks\.[a-z0-9-]+\.amazonaws\.com(\.cn)?/id/[0-9A-Za-z]{8,64}$")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_MAX_ROLE_NAME = 64
NODE_ROLE_PREFIX = "KarpenterNodeRole-"


class ConfigError(ValueError):
    """A context value is missing or malformed; the message names the key and what it expects."""


@dataclass(frozen=True)
class Networking:
    """Run the functions in these subnets (for clusters with a private API endpoint)."""

    vpc_id: str
    subnet_ids: tuple[str, ...]
    security_group_ids: tuple[str, ...] = ()  # empty: the stack creates one allowing egress only


@dataclass(frozen=True)
class AppConfig:
    cluster_name: str
    node_role_arn: str | None = None
    networking: Networking | None = None
    architecture: str = "arm64"
    python_version: str = "3.13"
    snap_start: bool = True
    # False deploys everything with every rule and event source disabled, the conversion webhook alone live:
    # for a hand-over while Karpenter's controller still runs (docs/deploy.md).
    controllers_enabled: bool = True
    conversion_reserved_concurrency: int | None = 5
    schedule_minutes: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_SCHEDULE_MINUTES))
    log_retention_days: int = 30
    log_level: str = "INFO"
    alarm_email: str | None = None
    cluster_endpoint: str = ""
    vm_memory_overhead_percent: float = 0.075
    reserved_enis: int = 0
    isolated_vpc: bool = False
    # Karpenter's enableZonalShift (-c enableZonalShift=true): avoid zones ARC shifts the cluster away from
    enable_zonal_shift: bool = False
    # Karpenter's feature gates (-c featureGates=StaticCapacity=true,...), with -c spotToSpotConsolidation kept
    feature_gates: FeatureGates = field(default_factory=FeatureGates)
    forwarder_namespace: str = "kube-system"  # as in infra/manifests/forwarder/
    forwarder_service_account: str = "serverless-karpenter-forwarder"
    # The forwarder's image is built for the nodes it runs on, which need not be the functions' architecture.
    forwarder_architecture: str = "x86_64"
    # IRSA for the forwarder (Fargate has no Pod Identity): the cluster's OIDC issuer, e.g.
    # oidc.eks.us-west-2.amazonaws.com/id/EXAMPLED539D4633E53DE1B71EXAMPLE; None: Pod Identity only.
    forwarder_oidc_issuer: str | None = None
    # "none": no in-cluster forwarder; the provisioner's sweep runs every sweep_seconds (docs/zero-in-cluster.md).
    forwarder: str = "in-cluster"
    sweep_seconds: int = 10
    layers_dir: Path = REPO_ROOT / "build" / "layers"
    functions_dir: Path = REPO_ROOT / "functions"

    @property
    def node_role_name(self) -> str:
        return NODE_ROLE_PREFIX + self.cluster_name

    @classmethod
    def from_context(cls, get: Callable[[str], Any]) -> AppConfig:
        """Read and validate every setting; `get` is `node.try_get_context` (None when absent)."""
        cluster_name = _text(get, "clusterName")
        if not cluster_name:
            raise ConfigError(
                "context clusterName is required: the EKS cluster to manage (cdk synth -c clusterName=...)"
            )
        if not _CLUSTER_NAME.match(cluster_name):
            raise ConfigError(f"clusterName {cluster_name!r} is not a valid EKS cluster name")
        node_role_arn = _text(get, "nodeRoleArn") or None
        if node_role_arn is not None and not _ROLE_ARN.match(node_role_arn):
            raise ConfigError(f"nodeRoleArn {node_role_arn!r} is not an IAM role ARN")
        if node_role_arn is None and len(NODE_ROLE_PREFIX + cluster_name) > _MAX_ROLE_NAME:
            raise ConfigError(
                f"the node role name {NODE_ROLE_PREFIX + cluster_name!r} exceeds IAM's {_MAX_ROLE_NAME} characters: "
                "pass an existing role with -c nodeRoleArn=..."
            )
        return cls(
            cluster_name=cluster_name,
            node_role_arn=node_role_arn,
            networking=_networking(get),
            architecture=_choice(get, "architecture", ARCHITECTURES, "arm64"),
            python_version=_choice(get, "pythonVersion", PYTHON_VERSIONS, "3.13"),
            snap_start=_flag(get, "snapStart", True),
            controllers_enabled=_flag(get, "controllersEnabled", True),
            conversion_reserved_concurrency=_optional_natural(get, "conversionReservedConcurrency", 5),
            schedule_minutes=_schedules(get),
            log_retention_days=_log_retention(get),
            log_level=_choice(get, "logLevel", LOG_LEVELS, "INFO"),
            alarm_email=_email(get),
            cluster_endpoint=_cluster_endpoint(get),
            vm_memory_overhead_percent=_fraction(get, "vmMemoryOverheadPercent", 0.075),
            reserved_enis=_natural(get, "reservedEnis", 0),
            isolated_vpc=_flag(get, "isolatedVpc", False),
            enable_zonal_shift=_flag(get, "enableZonalShift", False),
            feature_gates=_feature_gates(get),
            forwarder_namespace=_kubernetes_name(get, "forwarderNamespace", "kube-system"),
            forwarder_service_account=_kubernetes_name(
                get, "forwarderServiceAccount", "serverless-karpenter-forwarder"
            ),
            forwarder_architecture=_choice(get, "forwarderArchitecture", ARCHITECTURES, "x86_64"),
            forwarder_oidc_issuer=_oidc_issuer(get),
            forwarder=_choice(get, "forwarder", FORWARDER_MODES, "in-cluster"),
            sweep_seconds=_sweep_seconds(get),
            layers_dir=Path(_text(get, "layersDir") or REPO_ROOT / "build" / "layers"),
            functions_dir=Path(_text(get, "functionsDir") or REPO_ROOT / "functions"),
        )


def _text(get: Callable[[str], Any], key: str) -> str:
    value = get(key)
    if value is None:
        return ""
    if not isinstance(value, str | Path):
        raise ConfigError(f"context {key} must be a string, got {value!r}")
    return str(value).strip()


def _choice(get: Callable[[str], Any], key: str, choices: tuple[str, ...], default: str) -> str:
    value = _text(get, key) or default
    if value not in choices:
        raise ConfigError(f"context {key} must be one of {', '.join(choices)}; got {value!r}")
    return value


def _list(get: Callable[[str], Any], key: str, pattern: re.Pattern[str]) -> tuple[str, ...]:
    value = get(key)
    if value is None or value == "":
        return ()
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list | tuple) or not all(isinstance(item, str) for item in items):
        raise ConfigError(f"context {key} must be a comma-separated string or a list of strings, got {value!r}")
    cleaned = tuple(item.strip() for item in items if item.strip())
    bad = [item for item in cleaned if not pattern.match(item)]
    if bad:
        raise ConfigError(f"context {key} has malformed IDs: {', '.join(bad)}")
    return cleaned


def _networking(get: Callable[[str], Any]) -> Networking | None:
    vpc_id = _text(get, "vpcId")
    subnet_ids = _list(get, "subnetIds", _SUBNET_ID)
    security_group_ids = _list(get, "securityGroupIds", _SECURITY_GROUP_ID)
    if not vpc_id:
        if subnet_ids or security_group_ids:
            raise ConfigError("context subnetIds and securityGroupIds need vpcId")
        return None
    if not _VPC_ID.match(vpc_id):
        raise ConfigError(f"context vpcId {vpc_id!r} is not a VPC ID")
    if not subnet_ids:
        raise ConfigError("context vpcId needs subnetIds: the private subnets the functions run in")
    return Networking(vpc_id=vpc_id, subnet_ids=subnet_ids, security_group_ids=security_group_ids)


def _schedules(get: Callable[[str], Any]) -> dict[str, int]:
    value = get("scheduleMinutes")
    if value is None or value == "":
        return dict(DEFAULT_SCHEDULE_MINUTES)
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as error:
            raise ConfigError(f"context scheduleMinutes is not JSON: {error}") from error
    if not isinstance(value, dict):
        raise ConfigError('context scheduleMinutes must be an object such as {"disruption": 10}')
    unknown = sorted(set(value) - set(DEFAULT_SCHEDULE_MINUTES))
    if unknown:
        raise ConfigError(
            f"context scheduleMinutes has unknown functions {unknown}; known: {', '.join(DEFAULT_SCHEDULE_MINUTES)}"
        )
    merged = dict(DEFAULT_SCHEDULE_MINUTES)
    for name, minutes in value.items():
        if isinstance(minutes, bool) or not isinstance(minutes, int) or not 1 <= minutes <= 1440:
            raise ConfigError(f"context scheduleMinutes.{name} must be whole minutes in [1, 1440], got {minutes!r}")
        merged[name] = minutes
    return merged


def _integer(get: Callable[[str], Any], key: str, default: int) -> int:
    value = get(key)
    if value is None or value == "":
        return default
    try:
        if isinstance(value, bool):
            raise ValueError
        return int(value)
    except (TypeError, ValueError) as error:
        raise ConfigError(f"context {key} must be a whole number, got {value!r}") from error


def _natural(get: Callable[[str], Any], key: str, default: int) -> int:
    value = _integer(get, key, default)
    if value < 0:
        raise ConfigError(f"context {key} must not be negative, got {value}")
    return value


def _optional_natural(get: Callable[[str], Any], key: str, default: int) -> int | None:
    """A count that `none` turns off."""
    value = get(key)
    if isinstance(value, str) and value.strip().lower() == "none":
        return None
    count = _natural(get, key, default)
    if count == 0:
        raise ConfigError(f"context {key} must be at least 1, or none")
    return count


def _log_retention(get: Callable[[str], Any]) -> int:
    days = _integer(get, "logRetentionDays", 30)
    if days not in LOG_RETENTION:
        raise ConfigError(
            f"context logRetentionDays must be one of CloudWatch's periods {tuple(LOG_RETENTION)}, got {days}"
        )
    return days


def _fraction(get: Callable[[str], Any], key: str, default: float) -> float:
    value = get(key)
    if value is None or value == "":
        return default
    try:
        fraction = float(value)
    except (TypeError, ValueError) as error:
        raise ConfigError(f"context {key} must be a number, got {value!r}") from error
    if not 0 <= fraction < 1:
        raise ConfigError(f"context {key} must be a fraction in [0, 1), got {fraction}")
    return fraction


def _flag(get: Callable[[str], Any], key: str, default: bool) -> bool:
    value = get(key)
    if value is None or value == "":
        return default
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise ConfigError(f"context {key} must be true or false, got {value!r}")


def _feature_gates(get: Callable[[str], Any]) -> FeatureGates:
    """``featureGates`` as Karpenter's flag (``NodeRepair=true,StaticCapacity=true``); the older
    ``spotToSpotConsolidation`` flag, when given, sets that gate."""
    try:
        gates = FeatureGates.parse(_text(get, "featureGates"))
    except SettingsError as error:
        raise ConfigError(f"context featureGates: {error}") from None
    spot_to_spot = _flag(get, "spotToSpotConsolidation", gates.spot_to_spot_consolidation)
    return replace(gates, spot_to_spot_consolidation=spot_to_spot)


def _email(get: Callable[[str], Any]) -> str | None:
    email = _text(get, "alarmEmail")
    if email and not _EMAIL.match(email):
        raise ConfigError(f"context alarmEmail {email!r} is not an e-mail address")
    return email or None


def _cluster_endpoint(get: Callable[[str], Any]) -> str:
    endpoint = _text(get, "clusterEndpoint")
    if endpoint and not endpoint.startswith("https://"):
        raise ConfigError(f"context clusterEndpoint must be an https:// URL, got {endpoint!r}")
    return endpoint


def _sweep_seconds(get: Callable[[str], Any]) -> int:
    seconds = _integer(get, "sweepSeconds", 10)
    if not 5 <= seconds <= 60:
        raise ConfigError(
            f"context sweepSeconds must be in [5, 60] (the sweep loop with -c forwarder=none), got {seconds}"
        )
    return seconds


def _oidc_issuer(get: Callable[[str], Any]) -> str | None:
    """The issuer without its scheme, as IAM names the OIDC provider (`aws eks describe-cluster --query
    cluster.identity.oidc.issuer`)."""
    issuer = _text(get, "forwarderOidcIssuer").removeprefix("https://").rstrip("/")
    if not issuer:
        return None
    if not _OIDC_ISSUER.match(issuer):
        raise ConfigError(
            f"context forwarderOidcIssuer {issuer!r} is not an EKS OIDC issuer "
            "(oidc.eks.<region>.amazonaws.com/id/<ID>)"
        )
    return issuer


def _kubernetes_name(get: Callable[[str], Any], key: str, default: str) -> str:
    name = _text(get, key) or default
    if not _K8S_NAME.match(name):
        raise ConfigError(f"context {key} {name!r} is not a valid Kubernetes name")
    return name
