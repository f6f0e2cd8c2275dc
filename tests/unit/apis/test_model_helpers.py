"""What the models say about themselves: their ObjectRef, creation time, and a NodeClaim's initialization."""

from __future__ import annotations

from datetime import UTC, datetime

from autoscaler.apis.v1 import EC2NodeClass, NodeClaim
from autoscaler.apis.v1.conditions import set_condition
from autoscaler.apis.v1.nodeclaim import INITIALIZED, NodeClaimStatus
from autoscaler.kube.port import ObjectRef

NOW = datetime(2026, 11, 30, 4, 0, tzinfo=UTC)


def nodeclaim(**metadata: str) -> NodeClaim:
    return NodeClaim.model_validate(
        {
            "metadata": {"name": "default-a", **metadata},
            "spec": {
                "requirements": [],
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
            },
        }
    )


def test_a_model_names_itself_as_the_port_does() -> None:
    claim = nodeclaim(uid="u-1")
    assert claim.ref == ObjectRef("NodeClaim", "default-a", uid="u-1")
    assert nodeclaim().ref == ObjectRef("NodeClaim", "default-a")  # not stored yet: no uid to pin
    terms = [{"tags": {"karpenter.sh/discovery": "demo"}}]
    spec = {"role": "nodes", "subnetSelectorTerms": terms, "securityGroupSelectorTerms": terms}
    spec["amiSelectorTerms"] = [{"alias": "al2023@latest"}]
    nodeclass = EC2NodeClass.model_validate({"metadata": {"name": "default", "uid": "c-1"}, "spec": spec})
    assert nodeclass.ref == ObjectRef("EC2NodeClass", "default", uid="c-1")


def test_creation_time_is_read_or_unknown() -> None:
    assert nodeclaim(creationTimestamp="2026-11-30T04:00:00Z").created_at == NOW
    assert nodeclaim().created_at is None and nodeclaim(creationTimestamp="soon").created_at is None


def test_initialized_is_the_initialized_condition_true() -> None:
    claim = nodeclaim()
    assert not claim.initialized
    claim.status = NodeClaimStatus(conditions=set_condition(None, INITIALIZED, "Unknown", "NodeNotReady", "", now=NOW))
    assert not claim.initialized
    claim.status = NodeClaimStatus(conditions=set_condition(None, INITIALIZED, "True", INITIALIZED, "", now=NOW))
    assert claim.initialized
