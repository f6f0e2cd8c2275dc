"""Carrying out node repair's decisions (``repair``) through the Cluster port, and what they report.

Each NodeClaim due is given ``karpenter.sh/nodeclaim-termination-timestamp`` = now (its drain deadline: the
termination function then deletes its pods without waiting for PDBs or do-not-disrupt) and deleted by the
orchestrator's plain delete, as expiration is; the provisioner schedules its pods onto new capacity. A held
repair is said once per 15 minutes by a ``NodeRepairBlocked`` Warning event on the Node (the event recorder's
deduplication).
"""

from __future__ import annotations

import logging
from collections import Counter
from datetime import datetime

from autoscaler import metrics as m
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.conditions import timestamp
from autoscaler.clock import parse_time
from autoscaler.controllers.disruption.repair import UNHEALTHY, Repairs
from autoscaler.controllers.orchestration import Orchestrator, Outcome, Target
from autoscaler.kube.objects import Node
from autoscaler.kube.port import Cluster, ClusterError, Event
from autoscaler.metrics import MetricPoint

log = logging.getLogger(__name__)
REPAIR_BLOCKED = "NodeRepairBlocked"


def repair(cluster: Cluster, orchestrator: Orchestrator, repairs: Repairs, now: datetime, outcome: Outcome) -> None:
    for held in repairs.held:
        name = Node(held.node).name
        log.warning("node repair of %s held: %s", name, held.why, extra={"decision": "repair-blocked", "node": name})
        cluster.record_event(Event(Node(held.node).ref, REPAIR_BLOCKED, held.why, "Warning"))
    targets = []
    for due in repairs.due:
        annotations = due.claim.metadata.annotations or {}
        recorded = parse_time(annotations.get(wk.ANNOTATION_TERMINATION_TIMESTAMP))
        try:
            if recorded is None or recorded > now:  # an earlier deadline stands
                cluster.patch_metadata(due.claim.ref, annotations={wk.ANNOTATION_TERMINATION_TIMESTAMP: timestamp(now)})
        except ClusterError as error:  # the next pass tries again
            outcome.failed[due.claim.name] = f"setting the repair's termination deadline: {error}"
            continue
        log.info(
            "repairing NodeClaim %s: its node's %s condition is unhealthy past its toleration",
            due.claim.name,
            due.condition_type,
            extra={"decision": "repair", "nodeclaim": due.claim.name, "condition": due.condition_type},
        )
        targets.append(Target(due.claim, due.node))
    if targets:
        orchestrator.delete(targets, UNHEALTHY, outcome)


def repair_metric_points(repairs: Repairs, outcome: Outcome) -> list[MetricPoint]:
    """``karpenter_nodeclaims_unhealthy_disrupted_total`` per condition (snake case), NodePool, capacity type and
    image of the NodeClaims repaired this pass (``karpenter_nodeclaims_disrupted_total`` counts them too, reason
    ``unhealthy``, with the pass's other deletions)."""
    counted = Counter(
        (
            _snake(r.condition_type),
            (r.claim.metadata.labels or {}).get(wk.LABEL_NODEPOOL, ""),
            (r.claim.metadata.labels or {}).get(wk.LABEL_CAPACITY_TYPE, ""),
            (r.claim.status.image_id if r.claim.status else None) or "",
        )
        for r in repairs.due
        if outcome.deleted.get(r.claim.name) == UNHEALTHY
    )
    return [
        MetricPoint(
            m.NODECLAIMS_UNHEALTHY_DISRUPTED,
            count,
            dimensions=(("capacity_type", capacity), ("condition", condition), ("image_id", image), ("nodepool", pool)),
        )
        for (condition, pool, capacity, image), count in sorted(counted.items())
    ]


def _snake(name: str) -> str:
    """``AcceleratedHardwareReady`` -> ``accelerated_hardware_ready`` (Karpenter's pretty.ToSnakeCase)."""
    return "".join(f"_{c.lower()}" if c.isupper() and i else c.lower() for i, c in enumerate(name))
