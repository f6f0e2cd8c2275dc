"""The whole autoscaler for one EKS cluster: `cdk deploy -c clusterName=<name>`."""

from __future__ import annotations

from typing import Any

from aws_cdk import Aws, CfnOutput, Duration, Fn, RemovalPolicy, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from autoscaler import metrics, routing
from autoscaler.settings import STATE_TABLE_KEY, STATE_TABLE_TTL
from infra.catalog import FUNCTIONS, Capability
from infra.config import LOG_RETENTION, AppConfig, Networking
from infra.constructs.autoscaler_function import AutoscalerFunction, FunctionDefaults, shared_code
from infra.constructs.cluster_access import ClusterAccess, NodeRole
from infra.constructs.cluster_events import ClusterEvents
from infra.constructs.fast_sweep import FastSweep
from infra.constructs.forwarder_image import ForwarderImage
from infra.constructs.interruption import Interruption
from infra.constructs.layers import FunctionLayers
from infra.constructs.monitoring import Monitoring
from infra.constructs.permissions import ClusterScope, statements_for

TTL_ATTRIBUTE = STATE_TABLE_TTL
PARTITION_KEY = STATE_TABLE_KEY
# Item reads and writes only: no table administration, no streams, no batch writes.
STATE_TABLE_ACTIONS = (
    "dynamodb:GetItem",
    "dynamodb:BatchGetItem",
    "dynamodb:Query",
    "dynamodb:Scan",
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
    "dynamodb:DeleteItem",
    "dynamodb:ConditionCheckItem",
)


class AutoscalerStack(Stack):
    def __init__(self, scope: Construct, construct_id: str, *, config: AppConfig, **kwargs: object) -> None:
        super().__init__(scope, construct_id, **kwargs)  # type: ignore[arg-type]
        self.config = config
        self.acknowledged: list[Any] = []  # the cdk-nag findings accepted, with reasons (infra/nag.py)
        cluster_arn = f"arn:{Aws.PARTITION}:eks:{Aws.REGION}:{Aws.ACCOUNT_ID}:cluster/{config.cluster_name}"
        role_tags = {"eks:eks-cluster-name": config.cluster_name, "eks:eks-cluster-arn": cluster_arn}
        bus_name = routing.bus_name(config.cluster_name)

        self.node_role = NodeRole(
            self, "NodeRole", role_name=config.node_role_name, existing_arn=config.node_role_arn, tags=role_tags
        )
        self.table = dynamodb.Table(
            self,
            "State",
            partition_key=dynamodb.Attribute(name=PARTITION_KEY, type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            time_to_live_attribute=TTL_ATTRIBUTE,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            encryption=dynamodb.TableEncryption.AWS_MANAGED,
            removal_policy=RemovalPolicy.DESTROY,  # short-lived state only: every record expires within hours
        )
        self.layers = FunctionLayers(
            self,
            "Layers",
            layers_dir=config.layers_dir,
            python_version=config.python_version,
            architecture=config.architecture,
        )
        defaults = self._defaults(config, role_tags, bus_name)
        cluster = ClusterScope(config.cluster_name, cluster_arn, self.node_role.role.role_arn)
        network_statements = self._network_statements(defaults)
        code = shared_code(config.functions_dir)
        self.functions: dict[str, AutoscalerFunction] = {}
        functions_scope = Construct(self, "Functions")
        for spec in FUNCTIONS.values():
            function = AutoscalerFunction(
                functions_scope,
                _camel(spec.name),
                spec=spec,
                defaults=defaults,
                code=code,
                statements=[*statements_for(spec, cluster), *network_statements],
                # The public webhook URL cannot starve the account's concurrency (docs/migration.md).
                reserved_concurrency=config.conversion_reserved_concurrency if spec.name == "conversion" else None,
            )
            if Capability.STATE_TABLE in spec.capabilities:
                self.table.grant(function.role, *STATE_TABLE_ACTIONS)
            self.functions[spec.name] = function

        self.interruption = Interruption(
            self, "Interruption", consumer=self.functions["interruption"], enabled=config.controllers_enabled
        )
        self.cluster_events = ClusterEvents(
            self,
            "ClusterEvents",
            bus_name=bus_name,
            provisioner=self.functions["provisioner"],
            termination=self.functions["termination"],
            nodeclass=self.functions["nodeclass"],
            enabled=config.controllers_enabled,
        )
        for function in self.functions.values():
            function.function.add_environment("INTERRUPTION_QUEUE_URL", self.interruption.queue.queue_url)
        self._schedules(config)
        self.conversion_url = self.functions["conversion"].alias.add_function_url(
            auth_type=lambda_.FunctionUrlAuthType.NONE  # the API server cannot sign requests; see docs/deploy.md
        )
        self.access = ClusterAccess(
            self,
            "ClusterAccess",
            cluster_name=config.cluster_name,
            node_role=self.node_role,
            functions=list(self.functions.values()),
            bus=self.cluster_events.bus,
            forwarder_namespace=config.forwarder_namespace,
            forwarder_service_account=config.forwarder_service_account,
            role_tags=role_tags,
            oidc_issuer=config.forwarder_oidc_issuer,
            forwarder=config.forwarder == "in-cluster",
        )
        self.forwarder_image: ForwarderImage | None = None
        self.fast_sweep: FastSweep | None = None
        if config.forwarder == "in-cluster":
            self.forwarder_image = ForwarderImage(self, "Forwarder", architecture=config.forwarder_architecture)
        else:
            self.fast_sweep = FastSweep(
                self,
                "FastSweep",
                queue=self.cluster_events.provisioning_queue,
                seconds=config.sweep_seconds,
                log_retention=logs.RetentionDays[LOG_RETENTION[config.log_retention_days]],
                enabled=config.controllers_enabled,
            )
        self.monitoring = Monitoring(
            self,
            "Monitoring",
            dashboard_name=bus_name,
            functions=list(self.functions.values()),
            queues={"interruption": self.interruption.queue, "provisioning": self.cluster_events.provisioning_queue},
            dead_letter_queues={
                "interruption": self.interruption.dead_letters,
                "provisioning": self.cluster_events.provisioning_dead_letters,
            },
            alarm_email=config.alarm_email,
        )
        self._outputs()

    def _defaults(self, config: AppConfig, role_tags: dict[str, str], bus_name: str) -> FunctionDefaults:
        environment = {
            # Powertools (POWERTOOLS_SERVICE_NAME is each function's own name)
            "POWERTOOLS_METRICS_NAMESPACE": metrics.NAMESPACE,
            "LOG_LEVEL": config.log_level,
            # autoscaler.settings.Settings (INTERRUPTION_QUEUE_URL is added once the queue exists)
            "CLUSTER_NAME": config.cluster_name,
            "CLUSTER_ENDPOINT": config.cluster_endpoint,
            "STATE_TABLE_NAME": self.table.table_name,
            "EVENT_BUS_NAME": bus_name,
            "VM_MEMORY_OVERHEAD_PERCENT": str(config.vm_memory_overhead_percent),
            "RESERVED_ENIS": str(config.reserved_enis),
            "ISOLATED_VPC": "true" if config.isolated_vpc else "false",
            "FEATURE_GATES": config.feature_gates.to_flag(),
            "ENABLE_ZONAL_SHIFT": "true" if config.enable_zonal_shift else "false",
        }
        vpc, subnets, security_groups = self._network(config.networking)
        return FunctionDefaults(
            functions_dir=config.functions_dir,
            python_version=config.python_version,
            architecture=config.architecture,
            layers=self.layers.layers,
            environment=environment,
            log_retention_days=config.log_retention_days,
            role_tags=role_tags,
            snap_start=config.snap_start,
            vpc=vpc,
            subnets=subnets,
            security_groups=security_groups,
        )

    def _network(
        self, networking: Networking | None
    ) -> tuple[ec2.IVpc | None, list[ec2.ISubnet], list[ec2.ISecurityGroup]]:
        if networking is None:
            return None, [], []
        # The subnets are given explicitly, so the VPC's zone list is never consulted: no lookup at synth.
        vpc = ec2.Vpc.from_vpc_attributes(self, "Vpc", vpc_id=networking.vpc_id, availability_zones=Fn.get_azs())
        subnets = [ec2.Subnet.from_subnet_id(self, f"Subnet{i}", sid) for i, sid in enumerate(networking.subnet_ids)]
        if networking.security_group_ids:
            groups = [
                ec2.SecurityGroup.from_security_group_id(self, f"SecurityGroup{i}", gid)
                for i, gid in enumerate(networking.security_group_ids)
            ]
        else:
            groups = [
                ec2.SecurityGroup(
                    self, "FunctionsSecurityGroup", vpc=vpc, description="serverless-karpenter functions: egress only"
                )
            ]
        return vpc, subnets, groups

    def _network_statements(self, defaults: FunctionDefaults) -> list[iam.PolicyStatement]:
        """Lambda manages a VPC function's network interfaces with the function's own role."""
        if defaults.vpc is None:
            return []
        ec2_arn = f"arn:{Aws.PARTITION}:ec2:{Aws.REGION}:{Aws.ACCOUNT_ID}"
        return [
            iam.PolicyStatement(
                sid="LambdaVpcNetworkInterfaces",
                actions=[
                    "ec2:CreateNetworkInterface",
                    "ec2:DeleteNetworkInterface",
                    "ec2:AssignPrivateIpAddresses",
                    "ec2:UnassignPrivateIpAddresses",
                ],
                # Interface IDs are unknown until Lambda creates them; subnets and groups are the configured ones.
                resources=[
                    f"{ec2_arn}:network-interface/*",
                    *(f"{ec2_arn}:subnet/{subnet.subnet_id}" for subnet in defaults.subnets),
                    *(f"{ec2_arn}:security-group/{group.security_group_id}" for group in defaults.security_groups),
                ],
            ),
            iam.PolicyStatement(
                sid="LambdaVpcDescribeNetworkInterfaces",
                actions=["ec2:DescribeNetworkInterfaces", "ec2:DescribeSubnets"],
                resources=["*"],  # Describe* has no resource-level permissions
            ),
        ]

    def _schedules(self, config: AppConfig) -> None:
        for name, minutes in config.schedule_minutes.items():
            # The provisioner's sweep joins its queue's single message group, so it never overlaps a pass.
            target: events.IRuleTarget = (
                self.cluster_events.provisioning_target
                if name == "provisioner"
                else targets.LambdaFunction(self.functions[name].alias)
            )
            events.Rule(
                self,
                f"{_camel(name)}Schedule",
                description=f"{name} pass every {minutes} min",
                schedule=events.Schedule.rate(Duration.minutes(minutes)),
                targets=[target],
                enabled=config.controllers_enabled,
            )

    def _outputs(self) -> None:
        outputs = {
            "InterruptionQueueName": self.interruption.queue.queue_name,
            "InterruptionQueueUrl": self.interruption.queue.queue_url,
            "InterruptionDeadLetterQueueUrl": self.interruption.dead_letters.queue_url,
            "ProvisioningQueueName": self.cluster_events.provisioning_queue.queue_name,
            "ProvisioningQueueUrl": self.cluster_events.provisioning_queue.queue_url,
            "ProvisioningDeadLetterQueueUrl": self.cluster_events.provisioning_dead_letters.queue_url,
            "EventBusName": self.cluster_events.bus.event_bus_name,
            "StateTableName": self.table.table_name,
            "ConversionWebhookUrl": self.conversion_url.url,
            "NodeRoleArn": self.node_role.role.role_arn,
            # What `autoscaler manifests` renders the cluster side from (with the other outputs here).
            "ClusterName": self.config.cluster_name,
            "Region": Aws.REGION,
            "AlarmTopicArn": self.monitoring.topic.topic_arn,
        }
        if self.access.forwarder_role is not None and self.forwarder_image is not None:
            outputs["ForwarderRoleArn"] = self.access.forwarder_role.role_arn
            outputs["ForwarderImageUri"] = self.forwarder_image.image_uri
            outputs["ForwarderNamespace"] = self.config.forwarder_namespace
            outputs["ForwarderServiceAccount"] = self.config.forwarder_service_account
        if self.fast_sweep is not None:
            outputs["SweepStateMachineArn"] = self.fast_sweep.machine.state_machine_arn
        for name, function in self.functions.items():
            outputs[f"{_camel(name)}FunctionName"] = function.function.function_name
            outputs[f"{_camel(name)}RoleArn"] = function.role.role_arn
        for key, value in outputs.items():
            CfnOutput(self, key, value=value)


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))
