"""Capacity a plan holds beside the NodeClaims it creates, as ``autoscaler plan`` shows it. Pure.

- **Static NodePools** (``spec.replicas``): ``StaticController.describe`` (the reconciler's own decision, with the
  pending pods the scheduler put on the pool's nodes, found by :func:`nodepool_of`).
- **Reserved offerings**: one per capacity reservation of the NodePools' classes, from the same instance types the
  provisioner schedules on (``usable_nodepools``), with the planned NodeClaims the launcher would put into each
  (its own launch plans, counted down per reservation as the lifecycle step launches them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from autoscaler.apis.v1 import labels as wk
from autoscaler.cloudprovider.types import InstanceType
from autoscaler.controllers.provisioning.plan import LaunchChoice
from autoscaler.controllers.state import ClusterState
from autoscaler.kube.objects import Node


def nodepool_of(state: ClusterState) -> dict[str, str]:
    """Node and NodeClaim name -> the NodePool it belongs to (a placement names one or the other)."""
    found = {claim.name: (claim.metadata.labels or {}).get(wk.LABEL_NODEPOOL, "") for claim in state.nodeclaims}
    for node in map(Node, state.nodes):
        found[node.name] = node.labels.get(wk.LABEL_NODEPOOL, "")
    return found


def reservations(
    instance_types: Mapping[str, Sequence[InstanceType]], launches: Sequence[LaunchChoice]
) -> list[dict[str, Any]]:
    """One row per capacity reservation offered to a NodePool: its type and zone, its free instances as last known,
    whether it is available now, its price (Karpenter's: on-demand / 10,000,000, the instances being paid for
    anyway), the NodePools offered it and the planned NodeClaims (numbered from 1) that would launch into it."""
    rows: dict[str, dict[str, Any]] = {}
    for pool, types in sorted(instance_types.items()):
        for it in types:
            for offering in it.offerings:
                found = offering.reservation
                if found is None:
                    continue
                row = rows.setdefault(
                    found.id,
                    {
                        "reservation": found.id,
                        "reservationType": found.type,
                        "interruptible": found.interruptible,
                        "instanceType": it.name,
                        "zone": offering.zone,
                        "free": found.capacity,
                        "available": offering.available,
                        "pricePerHour": offering.price,
                        "nodePools": [],
                        "nodeClaims": [],
                    },
                )
                if pool not in row["nodePools"]:
                    row["nodePools"].append(pool)
    for number, launch in enumerate(launches, 1):
        if launch.reservation in rows:
            rows[launch.reservation]["nodeClaims"].append(number)
    return [rows[key] for key in sorted(rows)]
