"""Why a launched instance no longer matches its EC2NodeClass. Pure comparisons.

Each check answers with a :class:`Drift` whose reason is Karpenter's (AMIDrift, SubnetDrift,
SecurityGroupDrift, CapacityReservationDrift, PlacementGroupDrift, NodeClassDrift) and whose message says what changed.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.ec2nodeclass import AMIStatus, EC2NodeClass, SecurityGroupStatus, SubnetStatus
from autoscaler.apis.v1.ec2nodeclass_status import CapacityReservationStatus
from autoscaler.cloudprovider.requirements import compatible
from autoscaler.cloudprovider.types import Drift
from autoscaler.providers.aws.ec2instance import Instance

AMI_DRIFT = "AMIDrift"
SUBNET_DRIFT = "SubnetDrift"
SECURITY_GROUP_DRIFT = "SecurityGroupDrift"
PLACEMENT_GROUP_DRIFT = "PlacementGroupDrift"
NODECLASS_DRIFT = "NodeClassDrift"
CAPACITY_RESERVATION_DRIFT = "CapacityReservationDrift"

__all__ = [
    "AMI_DRIFT",
    "CAPACITY_RESERVATION_DRIFT",
    "NODECLASS_DRIFT",
    "PLACEMENT_GROUP_DRIFT",
    "SECURITY_GROUP_DRIFT",
    "SUBNET_DRIFT",
    "Drift",
]


def static_drift(nodeclass_annotations: Mapping[str, str], nodeclaim_annotations: Mapping[str, str]) -> Drift | None:
    """The class's hash differs from the one stamped on the NodeClaim. Only when both carry a hash and the
    same hash version: a changed hash algorithm re-stamps NodeClaims instead of rolling nodes."""
    keys = (wk.ANNOTATION_NODECLASS_HASH, wk.ANNOTATION_NODECLASS_HASH_VERSION)
    if not all(k in nodeclass_annotations and k in nodeclaim_annotations for k in keys):
        return None
    hash_key, version_key = keys
    if nodeclass_annotations[version_key] != nodeclaim_annotations[version_key]:
        return None
    if nodeclass_annotations[hash_key] == nodeclaim_annotations[hash_key]:
        return None
    return Drift(
        NODECLASS_DRIFT,
        f"EC2NodeClass hash changed from {nodeclaim_annotations[hash_key]} to {nodeclass_annotations[hash_key]}",
    )


def ami_drift(
    image_id: str, instance_type_labels: Mapping[str, str], amis: Sequence[AMIStatus], alias: str | None = None
) -> Drift | None:
    expected = [a.id for a in amis if compatible(instance_type_labels, a.requirements)]
    if image_id in expected:
        return None
    wanted = ", ".join(expected) or "none"
    instance_type = instance_type_labels.get(wk.LABEL_INSTANCE_TYPE, "?")
    source = f" for alias {alias}" if alias else ""
    return Drift(AMI_DRIFT, f"{image_id} not among resolved [{wanted}]{source} ({instance_type})")


def subnet_drift(subnet_id: str, subnets: Sequence[SubnetStatus]) -> Drift | None:
    if any(s.id == subnet_id for s in subnets):
        return None
    return Drift(SUBNET_DRIFT, f"instance is in subnet {subnet_id}, no longer among the class's subnets")


def security_group_drift(group_ids: Collection[str], groups: Sequence[SecurityGroupStatus]) -> Drift | None:
    expected = {g.id for g in groups}
    if set(group_ids) == expected:
        return None
    return Drift(
        SECURITY_GROUP_DRIFT,
        f"instance has security groups {sorted(group_ids)}, the class now selects {sorted(expected)}",
    )


def placement_group_drift(instance_group: str, class_group: str) -> Drift | None:
    """The instance is not in the group the class resolves to now: a selector added, removed or changed."""
    if instance_group == class_group:
        return None
    where = f"in placement group {instance_group}" if instance_group else "in no placement group"
    wanted = f"placement group {class_group}" if class_group else "no placement group"
    return Drift(PLACEMENT_GROUP_DRIFT, f"instance is {where}, the class now selects {wanted}")


def capacity_reservation_drift(reservation_id: str, reservations: Sequence[CapacityReservationStatus]) -> Drift | None:
    """A reserved instance whose reservation the class no longer selects (its terms changed, or it ended): only
    instances launched into a reservation can drift so (Karpenter's check)."""
    if not reservation_id or any(r.id == reservation_id for r in reservations):
        return None
    return Drift(
        CAPACITY_RESERVATION_DRIFT,
        f"instance is in capacity reservation {reservation_id}, no longer among the class's reservations",
    )


def dynamic_drift(
    live: Instance, nodeclass: EC2NodeClass, type_labels: Mapping[str, str], group_id: str
) -> Drift | None:
    """The first way ``live`` differs from what its Ready ``nodeclass`` resolves to now (AMI for its type's
    ``type_labels``, subnet, security groups, capacity reservation, placement group ``group_id``), or None."""
    status = nodeclass.status
    assert status is not None  # a Ready class has a status
    alias = next((t.alias for t in nodeclass.spec.ami_selector_terms if t.alias), None)
    return (
        ami_drift(live.image_id, type_labels, status.amis or [], alias)
        or subnet_drift(live.subnet_id, status.subnets or [])
        or security_group_drift(live.security_group_ids, status.security_groups or [])
        or capacity_reservation_drift(live.capacity_reservation_id, status.capacity_reservations or [])
        or placement_group_drift(live.placement_group_id, group_id)
    )
