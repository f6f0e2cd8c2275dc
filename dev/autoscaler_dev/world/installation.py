"""One installation in the embedded world, put there the way a user installs it in an account, for
``autoscaler doctor --embedded`` and its tests.

- ``cdk deploy``: the stack's bus, queues, rules and table (``stack.StackResources``), each function with its role
  (its code: its own ``functions/<name>/handler.py``), the queue-fed functions' event source mappings, and an
  EKS access entry mapping each role that talks to the API server to the group the functions' RBAC binds;
- ``autoscaler manifests | kubectl apply -f -``: the CRDs, the functions' RBAC and the forwarder, rendered from
  the stack's outputs by the command's own code, applied through the API of an emulator that enforces RBAC from
  what is applied to it;
- the forwarder takes its Lease, as its ServiceAccount; the user's first EC2NodeClass and NodePool are made
  Ready by the real nodeclass and NodePool controllers, acting as the functions' identity.

Every step goes through an authorizer or an API that would refuse it in an account, so a healthy doctor here
means these steps are enough; each broken variant a test makes is then one fault a user could have.
"""

from __future__ import annotations

import contextlib
import io
import json
import uuid
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import cached_property
from pathlib import Path
from typing import Any

from autoscaler import clock, routing, runtime
from autoscaler.apis.v1.ec2nodeclass import EC2NodeClass
from autoscaler.apis.v1.nodepool import NodePool
from autoscaler.commands import installation as manifests
from autoscaler.commands.doctor import ApiReader
from autoscaler.commands.doctor_checks import KUBERNETES_GROUP, LEASE, Context, Finding, run_checks
from autoscaler.commands.stack_outputs import StackOutputs
from autoscaler.controllers.nodeclass import NodeClassController
from autoscaler.controllers.nodepool import NodePoolController
from autoscaler.kube.client import KubernetesCluster
from autoscaler.kube.connect import plain_client
from autoscaler.kube.rest import KubeRest
from autoscaler.settings import Settings
from autoscaler_dev.kube_emulator import authentication as authn
from autoscaler_dev.kube_emulator.emulator import KubeEmulator
from autoscaler_dev.kube_emulator.enforcement import ActingAs, enforce
from autoscaler_dev.kube_emulator.gate import KubeGate
from autoscaler_dev.world.aws_world import ACCOUNT, DISCOVERY, KUBERNETES_VERSION, REGION, AWSWorld
from autoscaler_dev.world.embedded import EmbeddedCluster
from autoscaler_dev.world.stack import StackResources

REPOSITORY = Path(__file__).resolve().parents[3]
FIRST_OBJECTS = REPOSITORY / "events" / "manifests" / "general-purpose.yaml"  # what deploy.md has a user apply
IMAGE = f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/cdk-hnb659fds-container-assets:forwarder"
QUEUE_FED = {"provisioner": "provisioning", "interruption": "interruption"}
NO_CLUSTER_ACCESS = ("conversion",)  # served from a function URL: no access entry (infra/constructs/cluster_access.py)


class WorldSession:
    """What the doctor's checks call ``session``: boto3 clients, here of the moto world."""

    def __init__(self, aws: AWSWorld) -> None:
        self.aws = aws

    def client(self, service: str) -> Any:
        return self.aws.client(service)


@dataclass
class EmbeddedInstallation:
    aws: AWSWorld
    kube: KubeEmulator
    gate: KubeGate
    outputs: dict[str, str]
    now: datetime = field(default_factory=clock.utc_now)  # the doctor's clock: a test moves it to age the Lease

    @classmethod
    @contextlib.contextmanager
    def running(cls) -> Iterator[EmbeddedInstallation]:
        """A world of its own with one installation in it (``autoscaler doctor --embedded``)."""
        with EmbeddedCluster.start() as world:
            yield cls.deploy(world.aws, world.kube)

    @classmethod
    def deploy(cls, aws: AWSWorld, kube: KubeEmulator, cluster: str = "") -> EmbeddedInstallation:
        """Install into ``aws`` (which may hold other installations: every name here is the cluster's) and
        ``kube`` (whose RBAC is enforced from here on)."""
        cluster = cluster or f"doctor-{uuid.uuid4().hex[:8]}"
        outputs = _deploy_stack(aws, cluster)
        gate = enforce(kube)  # the bootstrap policy only: the functions' RBAC comes through the API, as applied
        installation = cls(aws, kube, gate, outputs)
        installation._apply_manifests()
        installation._forwarder_leads()
        installation._first_nodepool()
        installation.now = clock.utc_now() + timedelta(seconds=1)
        return installation

    # --- what doctor reads ---------------------------------------------------------------------------------
    @cached_property
    def admin(self) -> KubeRest:
        """The cluster's admin (who may create SubjectAccessReviews), as doctor is run."""
        return KubeRest(plain_client(self.kube.url, authn.DEFAULT_TOKEN))

    def context(self) -> Context:
        source = StackOutputs(f"the embedded installation of {self.outputs['ClusterName']}", dict(self.outputs))
        return Context(source, WorldSession(self.aws), ApiReader(self.admin), lambda: self.now)

    def findings(self) -> list[Finding]:
        return run_checks(self.context())

    # --- kubectl apply, the forwarder, the user's first objects ---------------------------------------------
    def _apply_manifests(self) -> None:
        installation = manifests.Installation.from_outputs(StackOutputs("stack", self.outputs))
        for obj in [*manifests.crds(), *manifests.functions_rbac(), *manifests.forwarder(installation)]:
            self.kube.apply(obj)

    def _forwarder_leads(self) -> None:
        namespace, account = self.outputs["ForwarderNamespace"], self.outputs["ForwarderServiceAccount"]
        forwarder = ActingAs.of(self.kube, authn.service_account(namespace, account))
        renewed = clock.utc_now().strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        forwarder.create(
            {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": LEASE, "namespace": namespace},
                "spec": {"holderIdentity": f"{account}-0", "leaseDurationSeconds": 15, "renewTime": renewed},
            }
        )

    def _first_nodepool(self) -> None:
        """``events/manifests``' default EC2NodeClass and NodePool, made Ready by the functions' own controllers."""
        objects = {o["kind"]: o for o in manifests.load_manifests(FIRST_OBJECTS)}
        nodeclass, nodepool = objects["EC2NodeClass"], objects["NodePool"]
        # The world's subnets and security group carry its discovery tag: the class selects them by it (retagging
        # them, as ``EmbeddedCluster.satisfy`` does, would take them from whoever else shares this moto world).
        selector = [{"tags": dict(DISCOVERY)}]
        nodeclass["spec"].update(role=self.aws.role, subnetSelectorTerms=selector, securityGroupSelectorTerms=selector)
        self.kube.apply(nodeclass)
        self.kube.apply(nodepool)
        role = self.outputs["NodeclassRoleArn"].rsplit("/", 1)[-1]
        functions = authn.authenticated(f"arn:aws:sts::{ACCOUNT}:assumed-role/{role}/doctor", KUBERNETES_GROUP)
        cluster = KubernetesCluster(KubeRest(plain_client(self.kube.url, self.gate.authenticator.issue(functions))))
        settings = Settings(cluster_name=self.outputs["ClusterName"], region=REGION, isolated_vpc=True)
        provider = runtime.cloud_provider(settings, lambda _name: None, clients=self.aws.clients())
        NodeClassController(cluster, provider.aws.resolver).reconcile_all()
        nodeclasses = [EC2NodeClass.model_validate(o) for o in self.kube.list("karpenter.k8s.aws/v1", "EC2NodeClass")]
        nodepools = [NodePool.model_validate(o) for o in self.kube.list("karpenter.sh/v1", "NodePool")]
        NodePoolController(cluster).reconcile(nodepools, nodeclasses, [], [])


# --- cdk deploy ------------------------------------------------------------------------------------------------
def _deploy_stack(aws: AWSWorld, cluster: str) -> dict[str, str]:
    """The stack's AWS side for ``cluster``, and its outputs as ``cdk deploy --outputs-file`` writes them."""
    eks, iam, functions = aws.client("eks"), aws.client("iam"), aws.client("lambda")
    if cluster not in eks.list_clusters()["clusters"]:
        vpc = {"subnetIds": list(aws.subnets.values()), "securityGroupIds": [aws.security_group]}
        eks.create_cluster(
            name=cluster,
            version=KUBERNETES_VERSION,
            roleArn=iam.get_role(RoleName=aws.role)["Role"]["Arn"],
            resourcesVpcConfig=vpc,
        )
    resources = StackResources.create(aws, cluster)
    queues = {"provisioning": resources.provisioning, "interruption": resources.interruption}
    outputs = {
        "ClusterName": cluster,
        "Region": REGION,
        "EventBusName": resources.bus,
        "StateTableName": resources.table,
        "InterruptionQueueName": resources.interruption.name,
        "InterruptionQueueUrl": resources.interruption.url,
        "InterruptionDeadLetterQueueUrl": resources.interruption.dead_letters_url,
        "ProvisioningQueueName": resources.provisioning.name,
        "ProvisioningQueueUrl": resources.provisioning.url,
        "ProvisioningDeadLetterQueueUrl": resources.provisioning.dead_letters_url,
        "NodeRoleArn": iam.get_role(RoleName=aws.role)["Role"]["Arn"],
        "ForwarderRoleArn": _role(iam, f"{cluster}-forwarder"),
        "ForwarderImageUri": IMAGE,
        "ForwarderNamespace": "kube-system",
        "ForwarderServiceAccount": manifests.DEFAULT_SERVICE_ACCOUNT,
    }
    for name in routing.FUNCTIONS:
        camel = "".join(part.capitalize() for part in name.split("_"))
        role = _role(iam, f"{cluster}-{camel}")
        function = functions.create_function(
            FunctionName=f"{cluster}-{camel}",
            Runtime="python3.13",
            Role=role,
            Handler="handler.handler",
            Code={"ZipFile": _code(name)},
            Environment={"Variables": {"CLUSTER_NAME": cluster, "EVENT_BUS_NAME": resources.bus}},
        )["FunctionName"]
        if name in QUEUE_FED:
            queue = queues[QUEUE_FED[name]]
            functions.create_event_source_mapping(FunctionName=function, EventSourceArn=queue.arn, Enabled=True)
        if name not in NO_CLUSTER_ACCESS:
            eks.create_access_entry(clusterName=cluster, principalArn=role, kubernetesGroups=[KUBERNETES_GROUP])
        outputs[f"{camel}FunctionName"] = function
        outputs[f"{camel}RoleArn"] = role
    return outputs


def _role(iam: Any, name: str) -> str:
    trust = {
        "Statement": [{"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}]
    }
    return str(iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"])


def _code(function: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.write(REPOSITORY / "functions" / function / "handler.py", "handler.py")
    return buffer.getvalue()
