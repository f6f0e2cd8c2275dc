"""A NodeClaim may require its NodePool's label, as Karpenter's NodeClaims do; a NodePool may not."""

from __future__ import annotations

import pytest

from autoscaler.apis.validation import InvalidObjectError, parse, runtime_errors

NODEPOOL_REQUIREMENT = {"key": "karpenter.sh/nodepool", "operator": "In", "values": ["default"]}
CLASS = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}


def test_a_nodeclaim_written_by_karpenter_requires_its_nodepool() -> None:
    claim = parse(
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodeClaim",
            "metadata": {"name": "default-x7k2p"},
            "spec": {"requirements": [NODEPOOL_REQUIREMENT], "nodeClassRef": CLASS},
        }
    )
    assert claim.spec.requirements[0].key == "karpenter.sh/nodepool"  # type: ignore[attr-defined]


def test_a_nodepool_may_not_require_the_nodepool_label() -> None:
    with pytest.raises(InvalidObjectError, match=r'label "karpenter\.sh/nodepool" is restricted'):
        parse(
            {
                "apiVersion": "karpenter.sh/v1",
                "kind": "NodePool",
                "metadata": {"name": "default"},
                "spec": {"template": {"spec": {"requirements": [NODEPOOL_REQUIREMENT], "nodeClassRef": CLASS}}},
            }
        )


def test_a_nodeclaim_still_may_not_require_the_hostname() -> None:
    with pytest.raises(InvalidObjectError, match=r'label "kubernetes\.io/hostname" is restricted'):
        parse(
            {
                "apiVersion": "karpenter.sh/v1",
                "kind": "NodeClaim",
                "metadata": {"name": "n"},
                "spec": {
                    "requirements": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["a"]}],
                    "nodeClassRef": CLASS,
                },
            }
        )


def test_a_nodeclaim_may_require_its_ec2nodeclass_a_nodepool_may_not() -> None:
    # Since v1.1 Karpenter's NodePool CRD admits the class label in requirements; its runtime validation, which
    # knows the label is not one a NodePool may constrain, then keeps the NodePool from going Ready.
    requirement = {"key": "karpenter.k8s.aws/ec2nodeclass", "operator": "In", "values": ["default"]}
    claim = parse(
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodeClaim",
            "metadata": {"name": "n"},
            "spec": {"requirements": [requirement], "nodeClassRef": CLASS},
        }
    )
    assert runtime_errors(claim) == []
    nodepool = parse(
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodePool",
            "metadata": {"name": "default"},
            "spec": {"template": {"spec": {"requirements": [requirement], "nodeClassRef": CLASS}}},
        }
    )
    problems = [str(e) for e in runtime_errors(nodepool)]
    assert (
        len(problems) == 1 and 'label "karpenter.k8s.aws/ec2nodeclass" is in a domain Karpenter reserves' in problems[0]
    )
