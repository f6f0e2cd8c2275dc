"""One construct owns every function's defaults, so no function repeats them.

Runtime, architecture, layers, tracing, a log group with retention, the Powertools environment, the settings
environment (`autoscaler.settings`), SnapStart on published versions behind the `live` alias, the async-invoke
policy, and a role of its own tagged for Pod Identity ABAC. Every trigger targets the alias: SnapStart only
applies to published versions.

Code: the whole `functions/` directory is one asset and each function's handler is `<name>/handler.handler`.
Synth therefore works before a function's folder exists (its handler lands with its own issue); a missing
`functions/<name>/handler.py` is reported as a synth warning rather than papered over with an empty folder.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from aws_cdk import Annotations, Duration, RemovalPolicy, Tags
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra.catalog import FunctionSpec
from infra.config import LOG_RETENTION

ALIAS_NAME = "live"
CODE_EXCLUDES = ["**/__pycache__", "**/*.pyc", "**/*.md", "**/tests"]


@dataclass(frozen=True)
class FunctionDefaults:
    """What every function shares."""

    functions_dir: Path
    python_version: str
    architecture: str
    layers: Sequence[lambda_.ILayerVersion]
    environment: Mapping[str, str]
    log_retention_days: int
    role_tags: Mapping[str, str]
    snap_start: bool = True
    vpc: ec2.IVpc | None = None
    subnets: Sequence[ec2.ISubnet] = ()
    security_groups: Sequence[ec2.ISecurityGroup] = ()
    async_retry_attempts: int = 2
    async_max_event_age_minutes: int = 10  # a stale event is worse than none: every trigger has a sweep

    @property
    def runtime(self) -> lambda_.Runtime:
        return lambda_.Runtime(f"python{self.python_version}", lambda_.RuntimeFamily.PYTHON, supports_snap_start=True)

    @property
    def lambda_architecture(self) -> lambda_.Architecture:
        return lambda_.Architecture.ARM_64 if self.architecture == "arm64" else lambda_.Architecture.X86_64


class AutoscalerFunction(Construct):
    """A function of the autoscaler: role, log group, function, published version and `live` alias."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        spec: FunctionSpec,
        defaults: FunctionDefaults,
        code: lambda_.Code,
        statements: Sequence[iam.PolicyStatement] = (),
        reserved_concurrency: int | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        self.spec = spec
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"serverless-karpenter {spec.name}: {spec.description}"[:1000],
        )
        tag_role(self.role, defaults.role_tags)
        for statement in statements:
            self.role.add_to_policy(statement)

        self.log_group = logs.LogGroup(self, "Logs", retention=_retention(defaults.log_retention_days))
        self.log_group.grant_write(self.role)

        self.function = lambda_.Function(
            self,
            "Function",
            description=spec.description,
            code=code,
            handler=f"{spec.name}/handler.handler",
            runtime=defaults.runtime,
            architecture=defaults.lambda_architecture,
            layers=list(defaults.layers),
            memory_size=spec.memory_mb,
            # Never for an SQS-fed function: throttled pollers would push messages into the DLQ.
            reserved_concurrent_executions=reserved_concurrency,
            timeout=Duration.seconds(spec.timeout_seconds),
            role=self.role,
            log_group=self.log_group,
            tracing=lambda_.Tracing.ACTIVE,
            snap_start=lambda_.SnapStartConf.ON_PUBLISHED_VERSIONS if defaults.snap_start else None,
            # Replaced versions are deleted: a SnapStart snapshot is billed for as long as its version is active.
            current_version_options=lambda_.VersionOptions(removal_policy=RemovalPolicy.DESTROY),
            environment={"POWERTOOLS_SERVICE_NAME": spec.name, **defaults.environment},
            vpc=defaults.vpc,
            vpc_subnets=ec2.SubnetSelection(subnets=list(defaults.subnets)) if defaults.vpc else None,
            security_groups=list(defaults.security_groups) if defaults.vpc else None,
        )
        self.alias = lambda_.Alias(
            self,
            "Alias",
            alias_name=ALIAS_NAME,
            version=self.function.current_version,
            retry_attempts=defaults.async_retry_attempts,
            max_event_age=Duration.minutes(defaults.async_max_event_age_minutes),
        )
        if defaults.snap_start:  # CDK warns that SnapStart needs published versions: the alias publishes them
            Annotations.of(self.function).acknowledge_warning(
                "@aws-cdk/aws-lambda:snapStartRequirePublish", "the live alias publishes a version on every change"
            )
        if not (defaults.functions_dir / spec.name / "handler.py").is_file():
            Annotations.of(self).add_warning_v2(
                "serverless-karpenter:handlerMissing",
                f"functions/{spec.name}/handler.py does not exist yet: the {spec.name} function fails until it lands",
            )

    @property
    def name(self) -> str:
        return self.spec.name


def tag_role(role: iam.IRole, tags: Mapping[str, str]) -> None:
    """Tag a role for Pod Identity / EKS ABAC (`eks:eks-cluster-name`, `eks:eks-cluster-arn`)."""
    for key, value in tags.items():
        Tags.of(role).add(key, value)


def shared_code(functions_dir: Path) -> lambda_.Code:
    """The `functions/` directory as one asset: every handler is `<name>/handler.handler` inside it."""
    return lambda_.Code.from_asset(str(functions_dir), exclude=CODE_EXCLUDES)


def _retention(days: int) -> logs.RetentionDays:
    return logs.RetentionDays[LOG_RETENTION[days]]
