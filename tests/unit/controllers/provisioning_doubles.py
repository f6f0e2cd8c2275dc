"""Doubles for provisioning tests: a small instance type catalogue, pods and NodePools."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from autoscaler.apis.resources import parse_resources
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.ec2nodeclass import EC2NodeClass
from autoscaler.apis.v1.nodepool import NodePool
from autoscaler.cloudprovider.errors import CloudProviderError
from autoscaler.cloudprovider.types import InstanceType, Offering

ZONES = ("us-west-2a", "us-west-2b")


def instance_type(name: str, cpu: int, memory_gib: int, price: float, arch: str = "amd64") -> InstanceType:
    return InstanceType(
        name=name,
        labels={wk.LABEL_INSTANCE_TYPE: name, wk.LABEL_ARCH: arch, wk.LABEL_OS: "linux"},
        offerings=tuple(
            Offering(z, c, price * (0.4 if c == "spot" else 1)) for z in ZONES for c in ("on-demand", "spot")
        ),
        capacity=parse_resources({"cpu": str(cpu), "memory": f"{memory_gib}Gi", "pods": "58"}),
    )


CATALOGUE = (
    instance_type("m5.large", 2, 8, 0.096),
    instance_type("m5.xlarge", 4, 16, 0.192),
    instance_type("m5.2xlarge", 8, 32, 0.384),
    instance_type("c6g.large", 2, 4, 0.068, arch="arm64"),
)


@dataclass
class FakeCatalogue:
    types: Sequence[InstanceType] = CATALOGUE
    errors: dict[str, CloudProviderError] = field(default_factory=dict)  # NodePool -> error

    def instance_types(self, nodepool: NodePool) -> list[InstanceType]:
        if nodepool.name in self.errors:
            raise self.errors[nodepool.name]
        return list(self.types)


def ready_nodeclass(name: str = "default", **annotations: str) -> EC2NodeClass:
    return EC2NodeClass.model_validate(
        {
            "metadata": {"name": name, "annotations": annotations or None},
            "spec": {
                "role": "nodes",
                "amiSelectorTerms": [{"alias": "al2023@latest"}],
                "subnetSelectorTerms": [{"tags": {"a": "b"}}],
                "securityGroupSelectorTerms": [{"tags": {"a": "b"}}],
            },
            "status": {
                "conditions": [
                    {"type": "Ready", "status": "True", "reason": "Ready", "lastTransitionTime": "2026-11-30T11:00:00Z"}
                ]
            },
        }
    )


def nodepool(name: str = "default", nodeclass: str = "default", **spec: Any) -> NodePool:
    template_spec = {
        "requirements": [{"key": wk.LABEL_CAPACITY_TYPE, "operator": "In", "values": ["on-demand"]}],
        "nodeClassRef": {"group": wk.AWS_GROUP, "kind": "EC2NodeClass", "name": nodeclass},
        **spec.pop("template_spec", {}),
    }
    template: dict[str, Any] = {"spec": template_spec}
    if "labels" in spec:
        template["metadata"] = {"labels": spec.pop("labels")}
    return NodePool.model_validate(
        {"metadata": {"name": name, "uid": f"uid-{name}"}, "spec": {"template": template, **spec}}
    )


def pending_pod(name: str, cpu: str = "1", memory: str = "1Gi", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {
            "containers": [{"name": "app", "resources": {"requests": {"cpu": cpu, "memory": memory}}}],
            **spec,
        },
        "status": {
            "phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
        },
    }
