"""Objects the conversion tests start from, and shorthands to convert them."""

from __future__ import annotations

import copy
from typing import Any

from autoscaler.apis.conversion import convert

V1 = "karpenter.sh/v1"
V1BETA1 = "karpenter.sh/v1beta1"
AWS_V1 = "karpenter.k8s.aws/v1"
AWS_V1BETA1 = "karpenter.k8s.aws/v1beta1"
TERMS = [{"tags": {"karpenter.sh/discovery": "demo"}}]
KUBELET = {
    "maxPods": 110,
    "systemReserved": {"memory": "256Mi", "cpu": "100m"},
    "evictionSoft": {"memory.available": "10%"},
    "evictionSoftGracePeriod": {"memory.available": "1m"},
}

NODEPOOL_V1BETA1: dict[str, Any] = {
    "apiVersion": V1BETA1,
    "kind": "NodePool",
    "metadata": {"name": "default", "uid": "0d3c9f2e", "labels": {"team": "a"}, "annotations": {"note": "kept"}},
    "spec": {
        "template": {
            "metadata": {"labels": {"app": "web"}, "annotations": {"a": "b"}},
            "spec": {
                "taints": [{"key": "dedicated", "value": "web", "effect": "NoSchedule"}],
                "startupTaints": [{"key": "agent", "effect": "NoExecute"}],
                "requirements": [
                    {
                        "key": "karpenter.k8s.aws/instance-family",
                        "operator": "In",
                        "values": ["m5", "m6i"],
                        "minValues": 2,
                    }
                ],
                "nodeClassRef": {"apiVersion": AWS_V1BETA1, "kind": "EC2NodeClass", "name": "default"},
                "kubelet": KUBELET,
            },
        },
        "disruption": {
            "consolidationPolicy": "WhenUnderutilized",
            "expireAfter": "336h",
            "budgets": [{"nodes": "20%"}, {"nodes": "0", "schedule": "@daily", "duration": "1h"}],
        },
        "limits": {"cpu": "100"},
        "weight": 10,
    },
    "status": {"resources": {"cpu": "4", "nodes": "2"}},
}

NODECLAIM_V1BETA1: dict[str, Any] = {
    "apiVersion": V1BETA1,
    "kind": "NodeClaim",
    "metadata": {"name": "default-abcde", "labels": {"karpenter.sh/nodepool": "default"}},
    "spec": {
        "requirements": [{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.large"]}],
        "resources": {"requests": {"cpu": "1", "pods": "3"}},
        "nodeClassRef": {"apiVersion": AWS_V1BETA1, "kind": "EC2NodeClass", "name": "default"},
        "kubelet": {"maxPods": 20},
    },
    "status": {"providerID": "aws:///us-west-2a/i-0abc", "nodeName": "ip-10-0-0-1", "imageID": "ami-0abc"},
}

NODECLASS_V1BETA1: dict[str, Any] = {
    "apiVersion": AWS_V1BETA1,
    "kind": "EC2NodeClass",
    "metadata": {"name": "default"},
    "spec": {
        "amiFamily": "AL2023",
        "role": "KarpenterNodeRole",
        "subnetSelectorTerms": TERMS,
        "securityGroupSelectorTerms": [{"name": "web"}, {"id": "sg-0abc"}],
        "associatePublicIPAddress": False,
        "userData": "echo hello",
        "tags": {"team": "a"},
        "instanceStorePolicy": "RAID0",
        "detailedMonitoring": True,
        "context": "arn:aws:ec2:us-west-2:111122223333:context/x",
    },
    "status": {"subnets": [{"id": "subnet-0abc", "zone": "us-west-2a", "zoneID": "usw2-az1"}]},
}


def changed(document: dict[str, Any], **paths: Any) -> dict[str, Any]:
    """A copy with values set at dotted paths (``spec__amiFamily`` style: ``__`` for a dot); None deletes."""
    result = copy.deepcopy(document)
    for dotted, value in paths.items():
        *parents, leaf = dotted.split("__")
        target = result
        for part in parents:
            target = target.setdefault(part, {})
        if value is None:
            target.pop(leaf, None)
        else:
            target[leaf] = value
    return result


def to_v1(document: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    group = document["apiVersion"].split("/")[0]
    return convert(document, f"{group}/v1", **kwargs)


def to_v1beta1(document: dict[str, Any]) -> dict[str, Any]:
    group = document["apiVersion"].split("/")[0]
    return convert(document, f"{group}/v1beta1")
