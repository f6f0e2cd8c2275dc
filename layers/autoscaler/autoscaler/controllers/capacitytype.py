"""Reserved nodes whose reservation ended: relabelled on-demand (Karpenter's capacityreservation.capacitytype).

When a capacity reservation expires or is cancelled, EC2 keeps its instances running as plain on-demand ones. The
cloud's listing then says ``on-demand`` for an instance whose NodeClaim (and Node) still say ``reserved``: the
NodeClaim and its registered Node get ``karpenter.sh/capacity-type=on-demand`` and lose the reservation labels, so
that the scheduler, consolidation's prices and the reservation's drift see what the node now is. Only that way:
Karpenter never promotes an on-demand node to reserved either.

It runs inside the garbage collection pass, which reads the cloud's instances and the cluster's NodeClaims and Nodes
anyway. Decisions are pure (:func:`demotions`); :func:`demote` writes them through the Cluster port.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.kube.objects import Node
from autoscaler.kube.port import Cluster, NotFoundError, ObjectRef

log = logging.getLogger(__name__)

# Karpenter drops the id and type labels; the interruptible one goes too, since an on-demand instance is not
# reclaimed with its former reservation (and on-demand offerings carry none of the three).
RESERVATION_LABELS: Final = (
    wk.LABEL_CAPACITY_RESERVATION_ID,
    wk.LABEL_CAPACITY_RESERVATION_TYPE,
    wk.LABEL_CAPACITY_RESERVATION_INTERRUPTIBLE,
)
DEMOTED_LABELS: Final[Mapping[str, str | None]] = {
    wk.LABEL_CAPACITY_TYPE: wk.CAPACITY_TYPE_ON_DEMAND,
    **dict.fromkeys(RESERVATION_LABELS, None),
}


@dataclass(frozen=True)
class Demotion:
    """One object to relabel: a NodeClaim or its Node, and the reservation it was in."""

    ref: ObjectRef
    reservation_id: str


def _reserved(labels: Mapping[str, str]) -> bool:
    return labels.get(wk.LABEL_CAPACITY_TYPE) == wk.CAPACITY_TYPE_RESERVED


def demotions(
    cloud: Sequence[NodeClaim], nodeclaims: Sequence[NodeClaim], node_of: Callable[[str], Mapping[str, Any] | None]
) -> list[Demotion]:
    """The NodeClaims labelled reserved whose instance the cloud lists as on-demand (``cloud``: the provider's
    listing), and their registered Nodes (``node_of``: the Node of a provider ID) labelled reserved. NodeClaims and
    Nodes being deleted are left alone (already draining), as are unregistered Nodes (their labels are not synced
    yet)."""
    on_demand = {
        c.status.provider_id
        for c in cloud
        if c.status and (c.metadata.labels or {}).get(wk.LABEL_CAPACITY_TYPE) == wk.CAPACITY_TYPE_ON_DEMAND
    }
    found = []
    for nodeclaim in nodeclaims:
        provider_id = (nodeclaim.status.provider_id if nodeclaim.status else None) or ""
        if provider_id not in on_demand or nodeclaim.metadata.deletion_timestamp:
            continue
        labels = nodeclaim.metadata.labels or {}
        reservation = labels.get(wk.LABEL_CAPACITY_RESERVATION_ID, "")
        if _reserved(labels):
            found.append(Demotion(nodeclaim.ref, reservation))
        raw = node_of(provider_id)
        node = Node(raw) if raw is not None else None
        if node is None or node.deleting or node.labels.get(wk.LABEL_REGISTERED) != "true":
            continue
        if _reserved(node.labels):
            found.append(Demotion(node.ref, node.labels.get(wk.LABEL_CAPACITY_RESERVATION_ID, reservation)))
    return found


def demote(cluster: Cluster, demotion: Demotion) -> bool:
    """Relabel one object; False when it is gone (nothing left to relabel)."""
    try:
        cluster.patch_metadata(demotion.ref, labels=DEMOTED_LABELS)
    except NotFoundError:
        return False
    note = f"capacity reservation {demotion.reservation_id or '(unknown)'} ended: the instance runs on-demand now"
    log.info("relabelled %s %s on-demand: %s", demotion.ref.kind, demotion.ref.name, note)
    return True
