"""An embedded cluster: the moto world and the Kubernetes API emulator together, seeded from manifests.

Used by ``autoscaler plan --embedded``, benchmarks and tests. Manifests are applied to the emulator as
``kubectl apply`` would; EC2NodeClasses are then resolved by the real nodeclass controller against the moto
world, which is first made to satisfy what each class selects by tag (its subnets and security group get the
class's selector tags) and the IAM role it names. Classes that select by ID or name, or AMIs other than
aliases, resolve as they would in an account without them: not Ready, with the reason.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from autoscaler import runtime
from autoscaler.apis.v1.ec2nodeclass import EC2NodeClass
from autoscaler.controllers.nodeclass import NodeClassController, Outcome
from autoscaler.kube.client import KubernetesCluster
from autoscaler.kube.connect import plain_client
from autoscaler.kube.rest import KubeRest
from autoscaler.providers.aws.provider import AWSCloudProvider, NodeClassLookup
from autoscaler_dev.kube_emulator.authentication import DEFAULT_TOKEN
from autoscaler_dev.kube_emulator.emulator import KubeEmulator
from autoscaler_dev.world.aws_world import AWSWorld

ANY_VALUE = "embedded"  # the tag value given for a selector's "*"


@dataclass
class EmbeddedCluster:
    aws: AWSWorld
    kube: KubeEmulator

    @classmethod
    @contextlib.contextmanager
    def start(cls) -> Iterator[EmbeddedCluster]:
        aws = AWSWorld.start()
        try:
            with KubeEmulator() as kube:
                yield cls(aws, kube)
        finally:
            aws.stop()

    def cluster(self) -> KubernetesCluster:
        """The cluster as its admin sees it (the default kubeconfig's token passes any RBAC the emulator enforces)."""
        return KubernetesCluster(KubeRest(plain_client(self.kube.url, DEFAULT_TOKEN)))

    def provider(self, nodeclasses: NodeClassLookup, instance_types: Sequence[str] = ()) -> AWSCloudProvider:
        """A cloud provider over this world (unavailable offerings in memory: the world has no state table)."""
        settings = self.aws.settings(instance_types=tuple(instance_types))
        return runtime.cloud_provider(settings, nodeclasses, clients=self.aws.clients())

    def apply(self, manifests: Sequence[dict[str, Any]]) -> None:
        """Create (or replace) each object in the emulator; EC2NodeClasses also shape the moto world."""
        for manifest in manifests:
            if manifest.get("kind") == "EC2NodeClass":
                self.satisfy(EC2NodeClass.model_validate(manifest))
            self.kube.apply(manifest)

    def satisfy(self, nodeclass: EC2NodeClass) -> None:
        """Give the world what the class selects by tag, and the role it names."""
        spec = nodeclass.spec
        for term in spec.subnet_selector_terms:
            for subnet in self.aws.subnets.values():
                self.aws.tag(subnet, _concrete(term.tags))
        for group_term in spec.security_group_selector_terms:
            self.aws.tag(self.aws.security_group, _concrete(group_term.tags))
        if spec.role:
            iam = self.aws.client("iam")
            with contextlib.suppress(iam.exceptions.EntityAlreadyExistsException):
                iam.create_role(RoleName=spec.role.rsplit("/", 1)[-1], AssumeRolePolicyDocument="{}")

    def resolve_nodeclasses(self) -> list[Outcome]:
        """What the nodeclass function does: status, conditions and hash of every EC2NodeClass."""
        provider = self.provider(lambda _name: None)
        return NodeClassController(self.cluster(), provider.aws.resolver).reconcile_all()


def _concrete(tags: dict[str, str] | None) -> dict[str, str]:
    return {key: ANY_VALUE if value == "*" else value for key, value in (tags or {}).items()}
