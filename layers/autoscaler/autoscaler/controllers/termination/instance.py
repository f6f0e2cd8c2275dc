"""The instance behind a NodeClaim during termination, through the CloudProvider port.

Garbage collection reuses :func:`observe_instance` (is the instance still there?) and
:func:`ensure_instance_terminating` (terminate it once, recording that on the NodeClaim).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from enum import Enum

from autoscaler.apis.v1.conditions import is_true, set_condition
from autoscaler.apis.v1.nodeclaim import NodeClaim, NodeClaimStatus
from autoscaler.cloudprovider import CloudProvider, ForeignInstanceError, NodeClaimNotFoundError
from autoscaler.kube.port import Cluster, ConflictError

INSTANCE_TERMINATING = "InstanceTerminating"


class InstanceState(Enum):
    RUNNING = "Running"  # pending, running, stopping or stopped: still to be terminated or waited for
    SHUTTING_DOWN = "ShuttingDown"  # terminating: its pods are going down with it
    GONE = "Gone"  # terminated, or never existed
    FOREIGN = "Foreign"  # live but not this cluster's: left alone, and for this cluster as good as gone


def observe_instance(cloud: CloudProvider, provider_id: str) -> InstanceState:
    """What EC2 says about the instance now. A shutting-down instance comes back from ``get`` with
    ``metadata.deletionTimestamp`` set (as Karpenter's AWS provider reports it); a terminated one raises."""
    if not provider_id:
        return InstanceState.GONE
    try:
        instance = cloud.get(provider_id)
    except NodeClaimNotFoundError:
        return InstanceState.GONE
    return InstanceState.SHUTTING_DOWN if instance.metadata.deletion_timestamp else InstanceState.RUNNING


def instance_terminating_since(nodeclaim: NodeClaim) -> str | None:
    """When we asked the cloud to terminate the instance (the InstanceTerminating condition's transition)."""
    conditions = nodeclaim.status.conditions if nodeclaim.status else None
    for condition in conditions or ():
        if condition.type == INSTANCE_TERMINATING and condition.status == "True":
            return condition.last_transition_time
    return None


def _with_instance_terminating(nodeclaim: NodeClaim, now: datetime) -> NodeClaim:
    updated = nodeclaim.model_copy(deep=True)
    status = updated.status or NodeClaimStatus()
    status.conditions = set_condition(
        status.conditions, INSTANCE_TERMINATING, "True", INSTANCE_TERMINATING, "", now=now
    )
    updated.status = status
    return updated


def mark_instance_terminating(
    cluster: Cluster, nodeclaim: NodeClaim, now: datetime, reread: Callable[[], NodeClaim | None]
) -> NodeClaim | None:
    """Set InstanceTerminating=True on the NodeClaim's status. On a write conflict (our copy is stale, e.g.
    after a metadata patch in the same step) re-read it once through ``reread`` and write again; None when
    the NodeClaim is gone."""
    if is_true(nodeclaim.status.conditions if nodeclaim.status else None, INSTANCE_TERMINATING):
        return nodeclaim
    try:
        return cluster.write_status(_with_instance_terminating(nodeclaim, now))
    except ConflictError:
        fresh = reread()
        if fresh is None:
            return None
        if is_true(fresh.status.conditions if fresh.status else None, INSTANCE_TERMINATING):
            return fresh
        return cluster.write_status(_with_instance_terminating(fresh, now))


def ensure_instance_terminating(
    cluster: Cluster,
    cloud: CloudProvider,
    nodeclaim: NodeClaim,
    now: datetime,
    reread: Callable[[], NodeClaim | None],
) -> InstanceState:
    """Terminate the NodeClaim's instance once and report its state.

    The first call asks the cloud to terminate it and records InstanceTerminating=True; later calls only
    look. An instance the cloud says this cluster does not own is FOREIGN: never terminated, nothing recorded.
    Crash-safe: terminating an instance twice is harmless, so a crash between the cloud call and the condition
    write just repeats the call."""
    provider_id = (nodeclaim.status.provider_id if nodeclaim.status else None) or ""
    if not provider_id:
        return InstanceState.GONE
    if not is_true(nodeclaim.status.conditions if nodeclaim.status else None, INSTANCE_TERMINATING):
        try:
            cloud.delete(nodeclaim)
        except ForeignInstanceError:
            return InstanceState.FOREIGN  # not marked terminating: nothing of ours is, and a retry asks again
        except NodeClaimNotFoundError:
            mark_instance_terminating(cluster, nodeclaim, now, reread)
            return InstanceState.GONE
        mark_instance_terminating(cluster, nodeclaim, now, reread)
    return observe_instance(cloud, provider_id)
