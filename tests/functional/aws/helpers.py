"""Builders shared by the AWS adapter tests."""

from __future__ import annotations

from typing import Any

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.ec2nodeclass import EC2NodeClass
from autoscaler.apis.v1.hashing import NODECLASS_HASH_VERSION, nodeclass_hash
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.providers.aws.provider import AWSCloudProvider
from tests.support.aws_world import INSTANCE_TYPES, AWSWorld


def hashed(nodeclass: EC2NodeClass) -> EC2NodeClass:
    annotations = {
        wk.ANNOTATION_NODECLASS_HASH: nodeclass_hash(nodeclass),
        wk.ANNOTATION_NODECLASS_HASH_VERSION: NODECLASS_HASH_VERSION,
    }
    return nodeclass.model_copy(update={"metadata": nodeclass.metadata.model_copy(update={"annotations": annotations})})


def provider(world: AWSWorld, *classes: EC2NodeClass, **kwargs: Any) -> AWSCloudProvider:
    by_name = {c.name: c for c in classes}
    kwargs.setdefault("clients", world.clients())
    return AWSCloudProvider(world.settings(), by_name.get, instance_type_names=INSTANCE_TYPES, **kwargs)


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
