"""Drift hashes: ``karpenter.sh/nodepool-hash`` and ``karpenter.k8s.aws/ec2nodeclass-hash``.

A hash covers the fields whose change should roll nodes (Karpenter's "static drift"), and skips the
ones handled elsewhere (requirements, selector terms, budgets). Like Karpenter's hashstructure
options, lists count as sets, zero values as absent, and key order not at all, so the same spec
hashes the same in every process.

Our hash function differs from Karpenter's Go one, so our hash-version values differ too
(``sk-v1``). When a NodePool's hash version changes, the NodeClaims of the pool are re-stamped
rather than drifted, exactly as Karpenter treats its own version bumps: switching from Karpenter to
this project therefore rolls no node.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from autoscaler.apis.v1.ec2nodeclass import EC2NodeClass
from autoscaler.apis.v1.nodepool import NodePool

NODEPOOL_HASH_VERSION = "sk-v1"
NODECLASS_HASH_VERSION = "sk-v1"

# Spec fields (by wire name) that static drift ignores, as Karpenter v1.14.1's `hash:"ignore"` tags: the
# requirements and selector terms drift through their own checks (requirements, AMI, subnet, group), and a
# change of capacity reservations or IPv4 prefixes rolls no node.
_NODECLASS_IGNORED = (
    "subnetSelectorTerms",
    "securityGroupSelectorTerms",
    "capacityReservationSelectorTerms",
    "amiSelectorTerms",
    "amiFamily",
    "ipPrefixCount",
)


def _canonical(value: Any) -> Any:
    """Drop zero values and order lists as sets, recursively."""
    if isinstance(value, dict):
        items = {k: _canonical(v) for k, v in value.items()}
        return {k: v for k, v in sorted(items.items()) if not _is_zero(v)}
    if isinstance(value, list):
        return sorted((_canonical(v) for v in value), key=lambda m: json.dumps(m, sort_keys=True))
    return value


def _is_zero(value: Any) -> bool:
    return value is None or value is False or value in (0, "", {}, [])


def stable_hash(value: Any) -> str:
    """A 64-bit decimal digest of the canonical JSON form of ``value``."""
    text = json.dumps(_canonical(value), sort_keys=True, separators=(",", ":"))
    return str(int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big"))


def nodepool_hash(nodepool: NodePool) -> str:
    """Hash of the NodePool's template (labels, annotations, taints, node class, expiry, grace period)."""
    template = nodepool.spec.template.to_dict()
    template["spec"].pop("requirements", None)
    return stable_hash(template)


def nodeclass_hash(nodeclass: EC2NodeClass) -> str:
    """Hash of the EC2NodeClass spec, with amiFamily as resolved (an alias implies its family) so that
    spelling out the family an alias already implies is not drift. Unlike Karpenter v1.0, which kept
    kubelet out of this hash for v1beta1 compatibility, kubelet settings are in it: changing them rolls
    the nodes of the class."""
    spec = nodeclass.spec.to_dict()
    for field in _NODECLASS_IGNORED:
        spec.pop(field, None)
    return stable_hash({"spec": spec, "amiFamily": nodeclass.spec.resolved_ami_family})
