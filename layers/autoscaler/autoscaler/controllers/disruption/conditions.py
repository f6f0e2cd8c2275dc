"""The NodeClaim conditions disruption decides from, computed from one read of the cluster. Pure.

- ``Drifted``: True with Karpenter's reason when the NodeClaim is no longer what its NodePool and EC2NodeClass
  would launch now: ``NodePoolDrifted`` (the NodePool's hash, compared only under the same hash version),
  ``RequirementsDrifted`` (its labels no longer satisfy the NodePool's requirements), or the cloud provider's
  ``NodeClassDrift`` / ``AMIDrift`` / ``SubnetDrift`` / ``SecurityGroupDrift``. Removed when none holds, and
  never set before launch (there is nothing to compare yet).
- ``status.lastPodEventTime``: when a pod last arrived on or left the node. Karpenter's podevents controller
  watches pods; a sweep cannot, so it keeps a digest of the node's pods in an annotation and, when the digest
  changed, takes the newest pod's scheduling time, or the sweep's own time when a pod left (conservative: a
  departure is dated at most one sweep late, which only delays consolidation).
- ``Consolidatable``: True once the NodeClaim is initialized and ``consolidateAfter`` has passed since the last
  pod event (or since initialization); removed when the NodePool says ``Never`` or before that time.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from autoscaler.apis.conversion.effective import effective_expire_after
from autoscaler.apis.duration import parse_nillable
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.common import Condition
from autoscaler.apis.v1.conditions import get_condition, is_true, set_condition, timestamp
from autoscaler.apis.v1.hashing import NODEPOOL_HASH_VERSION, nodepool_hash
from autoscaler.apis.v1.nodeclaim import INITIALIZED, LAUNCHED, NodeClaim
from autoscaler.apis.v1.nodepool import NodePool
from autoscaler.clock import parse_time
from autoscaler.cloudprovider.types import Drift
from autoscaler.controllers.state.pods import is_reschedulable
from autoscaler.kube.objects import Pod
from autoscaler.scheduling.requirements import Requirements

DRIFTED = "Drifted"
CONSOLIDATABLE = "Consolidatable"
NODEPOOL_DRIFTED = "NodePoolDrifted"
REQUIREMENTS_DRIFTED = "RequirementsDrifted"
POD_DIGEST = "serverless-karpenter.io/pod-digest"  # the node's pods when lastPodEventTime was last set
_ALLOW_UNDEFINED = frozenset(wk.WELL_KNOWN_LABELS)

KubeObject = Mapping[str, Any]


def static_drift(claim: NodeClaim, nodepool: NodePool) -> Drift | None:
    """The NodePool changed since the NodeClaim was created (hash, under the same hash version), or the
    NodeClaim's labels no longer meet the NodePool's requirements."""
    annotations = claim.metadata.annotations or {}
    stamped = annotations.get(wk.ANNOTATION_NODEPOOL_HASH)
    if stamped and annotations.get(wk.ANNOTATION_NODEPOOL_HASH_VERSION) == NODEPOOL_HASH_VERSION:
        current = nodepool_hash(nodepool)
        if stamped != current:
            return Drift(NODEPOOL_DRIFTED, f"NodePool {nodepool.name} hash changed from {stamped} to {current}")
    wanted = Requirements.from_selector(r.to_dict() for r in nodepool.spec.template.spec.requirements)
    labels = {k: v for k, v in (claim.metadata.labels or {}).items() if k in wanted}
    problem = Requirements.from_labels(labels).incompatibility(wanted, _ALLOW_UNDEFINED)
    if problem:
        return Drift(REQUIREMENTS_DRIFTED, f"NodeClaim labels no longer satisfy NodePool {nodepool.name}: {problem}")
    return None


def pod_digest(pods: Iterable[Pod]) -> str:
    uids = sorted(p.uid or p.name for p in pods)
    return hashlib.sha256(",".join(uids).encode()).hexdigest()[:16]


def _scheduled_at(pod: Pod) -> datetime | None:
    scheduled = pod.condition("PodScheduled")
    if scheduled is not None and scheduled.get("status") == "True":
        return parse_time(scheduled.get("lastTransitionTime"))
    return pod.created_at


def last_pod_event(claim: NodeClaim, pods: Sequence[KubeObject], now: datetime) -> tuple[datetime | None, str | None]:
    """(lastPodEventTime, digest) as they should now be: unchanged while the node's pods are the same set."""
    current = claim.status.last_pod_event_time if claim.status else None
    movable = [view for view in map(Pod, pods) if is_reschedulable(view)]
    digest = pod_digest(movable)
    if (claim.metadata.annotations or {}).get(POD_DIGEST) == digest:
        return parse_time(current), digest
    previous = parse_time(current)
    arrivals = [t for p in movable if (t := _scheduled_at(p))]
    newest = max(arrivals, default=None)
    if newest is not None and (previous is None or newest > previous):
        return min(newest, now), digest
    if POD_DIGEST not in (claim.metadata.annotations or {}) and previous is None:
        return newest, digest  # the first look: nothing seen leave yet
    return now, digest  # a pod left since the last look


def consolidatable_since(claim: NodeClaim, nodepool: NodePool, last_event: datetime | None) -> datetime | None:
    """When the NodeClaim becomes (or became) Consolidatable; None while it cannot (not initialized, Never, or of a
    static NodePool: Karpenter never marks those, consolidation leaves them alone)."""
    after = parse_nillable(nodepool.spec.disruption.consolidate_after)
    initialized = get_condition(claim.status.conditions if claim.status else None, INITIALIZED)
    if nodepool.spec.replicas is not None or after is None or initialized is None or initialized.status != "True":
        return None
    start = last_event or parse_time(initialized.last_transition_time)
    return start + after if start else None


def expires_at(claim: NodeClaim, nodepool: NodePool | None) -> datetime | None:
    """Creation time plus expireAfter (the NodePool's v1beta1 compatibility value included); None for Never."""
    created = parse_time(claim.metadata.creation_timestamp)
    expire_after = effective_expire_after(claim, nodepool) if nodepool is not None else claim.spec.expire_after
    after = parse_nillable(expire_after)
    return created + after if created and after is not None else None


@dataclass(frozen=True)
class ClaimStatus:
    """What the sweep wants a NodeClaim's disruption conditions, lastPodEventTime and pod digest to be."""

    conditions: list[Condition]
    last_pod_event_time: str | None
    digest: str | None

    def differs(self, claim: NodeClaim) -> tuple[bool, bool]:
        """(status changed, digest annotation changed)."""
        status = claim.status
        before = (status.conditions or []) if status else []
        changed = _comparable(before) != _comparable(self.conditions) or (
            (status.last_pod_event_time if status else None) != self.last_pod_event_time
        )
        return changed, (claim.metadata.annotations or {}).get(POD_DIGEST) != self.digest


def _comparable(conditions: Sequence[Condition]) -> list[tuple[str, str, str, str]]:
    return sorted((c.type, c.status, c.reason or "", c.message or "") for c in conditions)


def wanted_status(
    claim: NodeClaim,
    nodepool: NodePool,
    drift: Drift | None,
    pods: Sequence[KubeObject] | None,
    now: datetime,
) -> ClaimStatus:
    """The NodeClaim's Drifted and Consolidatable conditions and pod events. ``pods`` None: no node yet."""
    conditions: list[Condition] = list(claim.status.conditions or []) if claim.status else []
    launched = is_true(conditions, LAUNCHED)
    if drift is not None and launched:
        conditions = set_condition(conditions, DRIFTED, "True", drift.reason, drift.message, now=now)
    else:
        conditions = [c for c in conditions if c.type != DRIFTED]
    last_event, digest = (None, None) if pods is None else last_pod_event(claim, pods, now)
    since = consolidatable_since(claim, nodepool, last_event)
    if since is not None and since <= now:
        conditions = set_condition(conditions, CONSOLIDATABLE, "True", CONSOLIDATABLE, "", now=now)
    else:
        conditions = [c for c in conditions if c.type != CONSOLIDATABLE]
    return ClaimStatus(conditions, timestamp(last_event) if last_event else None, digest)
