"""Builders shared by the AWS adapter tests."""

from __future__ import annotations

import uuid
from typing import Any

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.ec2nodeclass import EC2NodeClass
from autoscaler.apis.v1.hashing import NODECLASS_HASH_VERSION, nodeclass_hash
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.providers.aws.clients import AWSClients
from autoscaler.providers.aws.provider import AWSCloudProvider
from autoscaler.runtime import cloud_provider
from autoscaler_dev.world.aws_world import INSTANCE_TYPES, REGION, AWSWorld


def hashed(nodeclass: EC2NodeClass) -> EC2NodeClass:
    annotations = {
        wk.ANNOTATION_NODECLASS_HASH: nodeclass_hash(nodeclass),
        wk.ANNOTATION_NODECLASS_HASH_VERSION: NODECLASS_HASH_VERSION,
    }
    return nodeclass.model_copy(update={"metadata": nodeclass.metadata.model_copy(update={"annotations": annotations})})


def provider(
    world: AWSWorld, *classes: EC2NodeClass, clients: AWSClients | None = None, **settings: Any
) -> AWSCloudProvider:
    """A cloud provider over the world's few instance types, reading ``classes``, with ``settings`` over the
    world's."""
    by_name = {c.name: c for c in classes}
    resolved = world.settings(**{"instance_types": INSTANCE_TYPES, **settings})
    return cloud_provider(resolved, by_name.get, clients=clients or world.clients())


def claim(
    name: str,
    nodeclass: str = "default",
    *requirements: tuple[str, str, list[str]],
    uid: str | None = None,
    nodepool: str = "default",
    requests: dict[str, str] | None = None,
    **spec: Any,
) -> NodeClaim:
    return NodeClaim.model_validate(
        {
            "metadata": {"name": name, "uid": uid or f"uid-{name}", "labels": {wk.LABEL_NODEPOOL: nodepool}},
            "spec": {
                "requirements": [{"key": k, "operator": op, "values": v} for k, op, v in requirements],
                "resources": {"requests": requests or {"cpu": "500m", "memory": "512Mi"}},
                "nodeClassRef": {"group": wk.AWS_GROUP, "kind": "EC2NodeClass", "name": nodeclass},
                **spec,
            },
        }
    )


def instance(world: AWSWorld, instance_id: str) -> dict[str, Any]:
    reservations = world.client("ec2").describe_instances(InstanceIds=[instance_id])["Reservations"]
    return dict(reservations[0]["Instances"][0])


def tags_of(raw: dict[str, Any]) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in raw.get("Tags", [])}


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def owned_tags(cluster: str, nodeclass: str) -> dict[str, str]:
    """A launch template's tags as our launcher (and Karpenter's) writes them."""
    return {
        wk.TAG_LAUNCH_TEMPLATE_CLUSTER: cluster,
        f"{wk.TAG_CLUSTER_PREFIX}{cluster}": "owned",
        wk.TAG_NODEPOOL: "default",
        wk.TAG_CLUSTER_NAME: cluster,
        wk.TAG_NODECLASS: nodeclass,
    }


def launch_template(world: AWSWorld, tags: dict[str, str], image: str = "ami-0123456789abcdef0") -> str:
    name = f"karpenter.k8s.aws/{uuid.uuid4().int % 10**19}"
    world.client("ec2").create_launch_template(
        LaunchTemplateName=name,
        LaunchTemplateData={"ImageId": image},
        TagSpecifications=[
            {"ResourceType": "launch-template", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}
        ],
    )
    return name


def profile_tags(cluster: str, nodeclass: str, region: str = REGION) -> dict[str, str]:
    return {
        f"{wk.TAG_CLUSTER_PREFIX}{cluster}": "owned",
        wk.TAG_CLUSTER_NAME: cluster,
        wk.TAG_NODECLASS: nodeclass,
        wk.TAG_REGION: region,
    }


def instance_profile(world: AWSWorld, name: str, tags: dict[str, str], role: str | None = None) -> str:
    iam = world.client("iam")
    iam.create_instance_profile(InstanceProfileName=name, Tags=[{"Key": k, "Value": v} for k, v in tags.items()])
    if role:
        iam.add_role_to_instance_profile(InstanceProfileName=name, RoleName=role)
    return name


def existing_templates(world: AWSWorld, *names: str) -> set[str]:
    """Which of ``names`` exist, asked by name (moto truncates a full listing at 15 templates)."""
    ec2, found = world.client("ec2"), set()
    for name in names:
        try:
            ec2.describe_launch_templates(LaunchTemplateNames=[name])
        except ec2.exceptions.ClientError:
            continue
        found.add(name)
    return found


def profile_names(world: AWSWorld) -> set[str]:
    pages = world.client("iam").get_paginator("list_instance_profiles").paginate()
    return {p["InstanceProfileName"] for page in pages for p in page["InstanceProfiles"]}
