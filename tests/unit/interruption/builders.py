"""Objects for the interruption tests, as the API server serves them (the doubles are in tests/support)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.apis.v1.nodepool import NodePool
from autoscaler.kube.port import KubeObject
from autoscaler_dev.world.interruptions import provider_id


def make_nodeclaim(
    name: str,
    instance_id: str | None,
    *,
    zone: str = "us-west-2a",
    instance_type: str = "m5.large",
    capacity_type: str = "spot",
    nodepool: str = "default",
    node_name: str | None = None,
    annotations: Mapping[str, str] | None = None,
) -> NodeClaim:
    return NodeClaim.model_validate(
        {
            "metadata": {
                "name": name,
                "uid": f"uid-{name}",
                "labels": {
                    wk.LABEL_NODEPOOL: nodepool,
                    wk.LABEL_ZONE: zone,
                    wk.LABEL_INSTANCE_TYPE: instance_type,
                    wk.LABEL_CAPACITY_TYPE: capacity_type,
                },
                "annotations": dict(annotations or {}),
                "finalizers": [wk.FINALIZER_TERMINATION],
            },
            "spec": {
                "requirements": [{"key": wk.LABEL_CAPACITY_TYPE, "operator": "In", "values": [capacity_type]}],
                "nodeClassRef": {"group": wk.AWS_GROUP, "kind": "EC2NodeClass", "name": "default"},
            },
            "status": {"providerID": provider_id(instance_id, zone), "nodeName": node_name} if instance_id else {},
        }
    )


def make_node(
    name: str, instance_id: str, *, zone: str = "us-west-2a", taints: Sequence[Mapping[str, str]] = ()
) -> KubeObject:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": "1", "labels": {wk.LABEL_ZONE: zone}},
        "spec": {"providerID": provider_id(instance_id, zone), "taints": [dict(t) for t in taints]},
    }


def make_nodepool(name: str, annotations: Mapping[str, str] | None = None) -> NodePool:
    return NodePool.model_validate(
        {
            "metadata": {"name": name, "annotations": dict(annotations or {})},
            "spec": {
                "template": {
                    "spec": {
                        "requirements": [{"key": wk.LABEL_CAPACITY_TYPE, "operator": "In", "values": ["spot"]}],
                        "nodeClassRef": {"group": wk.AWS_GROUP, "kind": "EC2NodeClass", "name": "default"},
                    }
                }
            },
        }
    )
