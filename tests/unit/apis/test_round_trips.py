"""Every field Karpenter v1.14.1 added since v1.0 round-trips: a manifest using all of them reads, is admitted by
the generated CRD (schema and CEL), and writes back exactly as written (plus the schema's defaults)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from autoscaler.apis.validation import parse, runtime_errors
from tests.unit.apis.crd_eval import cel_failures, schema_failures

CLASS_REF = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}
CONDITION = {
    "type": "Ready",
    "status": "True",
    "reason": "Ready",
    "message": "",
    "lastTransitionTime": "2026-11-30T00:00:00Z",
}

NODEPOOL: dict[str, Any] = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodePool",
    "metadata": {"name": "static"},
    "spec": {
        "replicas": 4,
        "limits": {"nodes": "6"},
        "disruption": {
            "consolidationPolicy": "Balanced",
            "consolidateAfter": "5m",
            "budgets": [{"nodes": "1", "reasons": ["Drifted", "Empty"], "schedule": "0 9 * * 1-5", "duration": "8h"}],
        },
        "template": {
            "metadata": {
                "labels": {"karpenter.k8s.aws/instance-tenancy": "default", "team": "ml"},
                "annotations": {"example.com/owner": "ml"},
            },
            "spec": {
                "requirements": [
                    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["reserved", "on-demand"]},
                    {
                        "key": "karpenter.k8s.aws/capacity-reservation-type",
                        "operator": "In",
                        "values": ["capacity-block"],
                    },
                    {"key": "karpenter.k8s.aws/instance-cpu", "operator": "Gte", "values": ["8"]},
                    {"key": "karpenter.k8s.aws/instance-memory", "operator": "Lte", "values": ["131072"]},
                    {
                        "key": "karpenter.k8s.aws/placement-group-partition",
                        "operator": "In",
                        "values": ["1", "2"],
                        "minValues": 2,
                    },
                ],
                "nodeClassRef": CLASS_REF,
                "expireAfter": "Never",
                "terminationGracePeriod": "2h",
            },
        },
    },
    "status": {
        "nodes": 4,
        "nodeClassObservedGeneration": 3,
        "resources": {"cpu": "32", "nodes": "4"},
        "conditions": [{**CONDITION, "type": "ValidationSucceeded", "reason": "ValidationSucceeded"}],
    },
}
NODECLAIM: dict[str, Any] = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodeClaim",
    "metadata": {"name": "static-x7k2p"},
    "spec": {
        "requirements": [
            {"key": "karpenter.sh/nodepool", "operator": "In", "values": ["static"]},
            {"key": "karpenter.k8s.aws/capacity-reservation-id", "operator": "In", "values": ["cr-0abc"]},
        ],
        "nodeClassRef": CLASS_REF,
        "expireAfter": "720h",
    },
    "status": {
        "imageID": "ami-0abc",
        "conditions": [{"type": "Drifted", "status": "True", "lastTransitionTime": "2026-11-30T00:00:00Z"}],
    },
}
NODECLASS: dict[str, Any] = {
    "apiVersion": "karpenter.k8s.aws/v1",
    "kind": "EC2NodeClass",
    "metadata": {"name": "default"},
    "spec": {
        "role": "KarpenterNodeRole-demo",
        "amiFamily": "AL2023",
        "amiSelectorTerms": [{"ssmParameter": "/golden/ami/current"}],
        "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
        "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
        "capacityReservationSelectorTerms": [{"tags": {"team": "ml"}, "ownerID": "123456789012"}, {"id": "cr-0abc"}],
        "placementGroupSelector": {"id": "pg-0abc"},
        "ipPrefixCount": 1,
        "networkInterfaces": [
            {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
            {"networkCardIndex": 1, "deviceIndex": 0, "interfaceType": "efa-only"},
        ],
        "connectionTracking": {"tcpEstablishedTimeout": 600, "udpStreamTimeout": 120, "udpTimeout": 30},
        "cpuOptions": {"nestedVirtualization": "enabled"},
        "blockDeviceMappings": [
            {
                "deviceName": "/dev/xvda",
                "rootVolume": True,
                "ebs": {"snapshotID": "snap-0abc", "volumeInitializationRate": 250},
            }
        ],
        "metadataOptions": {
            "httpEndpoint": "enabled",
            "httpProtocolIPv6": "disabled",
            "httpPutResponseHopLimit": 1,
            "httpTokens": "required",
        },
    },
    "status": {
        "amis": [
            {
                "id": "ami-0abc",
                "deprecated": True,
                "requirements": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}],
            }
        ],
        "capacityReservations": [
            {
                "id": "cr-0abc",
                "availabilityZone": "us-west-2a",
                "instanceMatchCriteria": "targeted",
                "instanceType": "p5.48xlarge",
                "ownerID": "123456789012",
                "reservationType": "capacity-block",
                "state": "expiring",
                "interruptible": True,
                "endTime": "2026-12-01T00:00:00Z",
            }
        ],
        "conditions": [CONDITION],
    },
}
OVERLAY: dict[str, Any] = {
    "apiVersion": "karpenter.sh/v1alpha1",
    "kind": "NodeOverlay",
    "metadata": {"name": "gpu-price"},
    "spec": {
        "weight": 100,
        "requirements": [{"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Gt", "values": ["0"]}],
        "price": "1.25",
        "capacity": {"example.com/license": "4"},
    },
    "status": {"conditions": [CONDITION]},
}
BUFFER: dict[str, Any] = {
    "apiVersion": "autoscaling.x-k8s.io/v1beta1",
    "kind": "CapacityBuffer",
    "metadata": {"name": "spare", "namespace": "default"},
    "spec": {
        "provisioningStrategy": "buffer.x-k8s.io/active-capacity",
        "podTemplateRef": {"name": "chunk"},
        "limits": {"cpu": "8"},
    },
    "status": {
        "podTemplateRef": {"name": "chunk"},
        "replicas": 2,
        "podTemplateGeneration": 1,
        "provisioningStrategy": "buffer.x-k8s.io/active-capacity",
        "conditions": [{**CONDITION, "type": "ReadyForProvisioning"}],
    },
}
FULL = {
    "NodePool": NODEPOOL,
    "NodeClaim": NODECLAIM,
    "EC2NodeClass": NODECLASS,
    "NodeOverlay": OVERLAY,
    "CapacityBuffer": BUFFER,
}


@pytest.mark.parametrize("kind", list(FULL))
def test_every_new_field_round_trips_and_is_admitted(kind: str) -> None:
    document = copy.deepcopy(FULL[kind])
    obj = parse(document)
    assert obj.to_dict() == document
    assert parse(obj.to_dict()).to_dict() == document
    assert schema_failures(kind, document) == []
    assert cel_failures(kind, document) == []
    assert runtime_errors(obj) == []


def test_defaults_of_the_new_fields_are_karpenters() -> None:
    buffer = copy.deepcopy(BUFFER)
    del buffer["spec"]["provisioningStrategy"], buffer["status"]
    assert parse(buffer).to_dict()["spec"]["provisioningStrategy"] == "buffer.x-k8s.io/active-capacity"
    reservation = {
        k: v for k, v in NODECLASS["status"]["capacityReservations"][0].items() if k not in ("reservationType", "state")
    }
    nodeclass = copy.deepcopy(NODECLASS)
    nodeclass["status"]["capacityReservations"] = [reservation]
    stored = parse(nodeclass).to_dict()["status"]["capacityReservations"][0]
    assert (stored["reservationType"], stored["state"]) == ("default", "active")
    dynamic = copy.deepcopy(NODEPOOL)
    del dynamic["spec"]["replicas"], dynamic["spec"]["disruption"]["consolidationPolicy"]
    assert parse(dynamic).to_dict()["spec"]["disruption"]["consolidationPolicy"] == "WhenEmptyOrUnderutilized"
