"""Objects for the garbage collection tests: instances as the cloud provider lists them, NodeClaims, Nodes and
EC2NodeClasses as the API server serves them, owned launch templates and instance profiles (the doubles of
Kubernetes and EC2 are in tests/support)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.conditions import timestamp
from autoscaler.apis.v1.ec2nodeclass import EC2NodeClass
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.cloudprovider.owned import OwnedInstanceProfile, OwnedLaunchTemplate
from tests.support import kube as k8s

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


def ago(seconds: float) -> datetime:
    return NOW - timedelta(seconds=seconds)


def pid(instance: str) -> str:
    return f"aws:///us-west-2a/{instance}"


def instance(
    instance_id: str,
    *,
    age: float = 600,
    nodeclass: str = "default",
    nodeclaim: str | None = None,
    shutting_down: bool = False,
    nodepool: str = "default",
    capacity_type: str = "spot",
) -> NodeClaim:
    """An instance as ``CloudProvider.list`` reports it."""
    return NodeClaim.model_validate(
        {
            "metadata": {
                "name": nodeclaim,
                "creationTimestamp": timestamp(ago(age)),
                "deletionTimestamp": timestamp(NOW) if shutting_down else None,
                "labels": {wk.LABEL_NODEPOOL: nodepool, wk.LABEL_CAPACITY_TYPE: capacity_type},
            },
            "spec": {
                "requirements": [],
                "nodeClassRef": {"group": wk.AWS_GROUP, "kind": "EC2NodeClass", "name": nodeclass},
            },
            "status": {"providerID": pid(instance_id)},
        }
    )


def nodeclaim(
    name: str,
    instance_id: str | None = None,
    *,
    age: float = 600,
    launched: float | None = None,
    registered: bool = False,
    deleting: bool = False,
    nodeclass: str = "default",
    node: str | None = None,
    labels: dict[str, str] | None = None,
) -> NodeClaim:
    conditions = []
    if launched is not None:
        conditions.append({"type": "Launched", "status": "True", "reason": "Launched", "message": "",
                           "lastTransitionTime": timestamp(ago(launched))})  # fmt: skip
    if registered:
        conditions.append({"type": "Registered", "status": "True", "reason": "Registered", "message": "",
                           "lastTransitionTime": timestamp(ago(age))})  # fmt: skip
    status: dict[str, Any] = {"conditions": conditions}
    if instance_id:
        status["providerID"] = pid(instance_id)
    if node:
        status["nodeName"] = node
    return NodeClaim.model_validate(
        k8s.nodeclaim(
            name,
            nodeclass=nodeclass,
            requirements=[],
            labels=labels or {wk.LABEL_CAPACITY_TYPE: "on-demand"},
            status=status,
            uid=f"uid-{name}",
            creationTimestamp=timestamp(ago(age)),
            deletionTimestamp=timestamp(NOW) if deleting else None,
            finalizers=[wk.FINALIZER_TERMINATION],
        )
    )


def node(name: str, instance_id: str, *, ready: bool, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "uid": f"uid-{name}", **({"labels": labels} if labels else {})},
        "spec": {"providerID": pid(instance_id)},
        "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def nodeclass(
    name: str = "default",
    *,
    amis: tuple[str, ...] = ("ami-current",),
    profile: str | None = None,
    deleting: bool = False,
) -> EC2NodeClass:
    status: dict[str, Any] = {"amis": [{"id": a, "name": a, "requirements": []} for a in amis]}
    if profile:
        status["instanceProfile"] = profile
    return EC2NodeClass.model_validate(
        {
            "metadata": {
                "name": name,
                "deletionTimestamp": timestamp(NOW) if deleting else None,
                "finalizers": [wk.FINALIZER_NODECLASS_TERMINATION] if deleting else None,
            },
            "spec": {
                "role": "NodeRole",
                "amiSelectorTerms": [{"alias": "al2023@latest"}],
                "subnetSelectorTerms": [{"tags": {"discovery": "x"}}],
                "securityGroupSelectorTerms": [{"tags": {"discovery": "x"}}],
            },
            "status": status,
        }
    )


def invalid(kind: str, name: str, **body: Any) -> dict[str, Any]:
    """An object the API server stored but our models reject (here: its spec is missing)."""
    group = "karpenter.sh/v1" if kind == "NodeClaim" else "karpenter.k8s.aws/v1"
    return {"apiVersion": group, "kind": kind, "metadata": {"name": name}, **body}


def template(name: str, nodeclass: str = "default", image: str | None = "ami-current", age: float = 600) -> Any:
    return OwnedLaunchTemplate(id=f"lt-{name}", name=name, nodeclass=nodeclass, image_id=image, created_at=ago(age))


def profile(name: str, nodeclass: str, age: float = 600) -> OwnedInstanceProfile:
    return OwnedInstanceProfile(name=name, nodeclass=nodeclass, created_at=ago(age), roles=("NodeRole",))
