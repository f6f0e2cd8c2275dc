"""Launch: create the instance of every NodeClaim whose ``Launched`` condition is not yet True.

Identical launches share one CreateFleet call (the provider's ``create_many``). A NodeClaim is never
launched twice: the provider finds an instance already launched for it (ClientToken from its UID, and the
``karpenter.sh/nodeclaim`` tag written at launch), and a NodeClaim that already has a provider ID is only
marked Launched. A capacity error or a node class that is not ready deletes the NodeClaim with an event,
so that the next pass schedules its pods again, on other offerings; any other error keeps it Launched=Unknown
with the reason, for the next pass to retry.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.nodeclaim import LAUNCHED, NodeClaim
from autoscaler.cloudprovider.errors import (
    CloudProviderError,
    CreateError,
    InsufficientCapacityError,
    NodeClaimNotFoundError,
    NodeClassNotReadyError,
)
from autoscaler.cloudprovider.overlays import Overlays
from autoscaler.controllers.lifecycle.cloud import LifecycleCloud
from autoscaler.controllers.lifecycle.work import ClaimWork, truncate
from autoscaler.kube.port import Cluster, Event

log = logging.getLogger(__name__)
LAUNCH_CHUNK = 100  # NodeClaims per create_many call; the deadline is checked between calls

INSUFFICIENT_CAPACITY = "insufficient_capacity"
NODECLASS_NOT_READY = "nodeclass_not_ready"


@dataclass
class LaunchResult:
    launched: list[str] = field(default_factory=list)
    deleted: dict[str, list[str]] = field(default_factory=dict)  # disruption reason -> NodeClaim names
    failed: dict[str, str] = field(default_factory=dict)  # NodeClaim -> why it stays unlaunched this pass
    deferred: int = 0  # left for the next pass: the invocation ran short of time


def needs_launch(work: ClaimWork) -> bool:
    return not work.is_true(LAUNCHED)


def resolved_labels(claim: NodeClaim) -> dict[str, str]:
    """Custom labels pinned by a single-value requirement (Karpenter resolves these onto the node)."""
    labels = {}
    for requirement in claim.spec.requirements:
        key = requirement.key
        if key in wk.WELL_KNOWN_LABELS or wk.is_restricted_node_label(key):
            continue
        if requirement.operator == "In" and requirement.values:
            labels[key] = sorted(requirement.values)[0]
    return labels


def populate(work: ClaimWork, launched: NodeClaim) -> None:
    """Copy what the cloud resolved onto the NodeClaim: the instance's labels (the NodeClaim's own win),
    its annotations, provider ID, image, capacity and allocatable."""
    labels = {**(launched.metadata.labels or {}), **resolved_labels(work.claim), **work.labels}
    annotations = {**(work.claim.metadata.annotations or {}), **(launched.metadata.annotations or {})}
    work.update_metadata(labels=labels, annotations=annotations)
    status = launched.status
    if status is not None:
        work.update_status(
            provider_id=status.provider_id,
            image_id=status.image_id,
            capacity=status.capacity,
            allocatable=status.allocatable,
        )
    work.set(LAUNCHED, "True", LAUNCHED)


class Launch:
    def __init__(self, cluster: Cluster, cloud: LifecycleCloud) -> None:
        self._cluster, self._cloud = cluster, cloud

    def run(
        self,
        works: Sequence[ClaimWork],
        time_left: Callable[[], float],
        reserve: float,
        overlays: Overlays | None = None,
    ) -> LaunchResult:
        result = LaunchResult()
        due = [w for w in works if not w.deleted and needs_launch(w)]
        for work in [w for w in due if w.status.provider_id]:
            # Launched by an earlier pass (or adopted): record it, never launch again.
            work.set(LAUNCHED, "True", LAUNCHED)
            result.launched.append(work.name)
        self._repair([w for w in works if not w.deleted and w.status.provider_id])
        due = [w for w in due if not w.status.provider_id]
        try:
            for start in range(0, len(due), LAUNCH_CHUNK):
                if time_left() < reserve:
                    result.deferred += len(due) - start
                    log.warning(
                        "deferring %d launches to the next pass: the invocation is running out of time",
                        result.deferred,
                    )
                    break
                chunk = due[start : start + LAUNCH_CHUNK]
                launched = self._cloud.create_many([w.claim for w in chunk], overlays)
                for work, outcome in zip(chunk, launched, strict=True):
                    self._record(work, outcome, result)
        finally:
            if due:
                self._cloud.settle_launches()
        return result

    def _repair(self, works: Sequence[ClaimWork]) -> None:
        """A pass cut short between the status write and the label patch left a launched NodeClaim without its
        instance's labels, and a launch recorded without its capacity (an instance type the cloud could not
        describe then) leaves it without allocatable, which initialization waits for: read them back from the
        cloud, only ever for such NodeClaims."""
        bare = {
            w.status.provider_id: w for w in works if wk.LABEL_INSTANCE_TYPE not in w.labels or not w.status.allocatable
        }
        if not bare:
            return
        for provider_id, found in self._cloud.get_many([p for p in bare if p]).items():
            work = bare[provider_id]
            if not isinstance(found, NodeClaim):
                log.info("no instance details for nodeclaim %s: %s", work.name, found)
                continue
            labels = {**(found.metadata.labels or {}), **resolved_labels(work.claim), **work.labels}
            work.update_metadata(labels=labels)
            if not work.status.allocatable and found.status and found.status.allocatable:
                work.update_status(capacity=found.status.capacity, allocatable=found.status.allocatable)

    def _record(self, work: ClaimWork, outcome: NodeClaim | CloudProviderError, result: LaunchResult) -> None:
        if isinstance(outcome, NodeClaim):
            populate(work, outcome)
            result.launched.append(work.name)
            status = outcome.status
            log.info(
                "launched nodeclaim %s: %s (%s, %s, %s)",
                work.name,
                status.provider_id if status else "",
                work.labels.get(wk.LABEL_INSTANCE_TYPE),
                work.labels.get(wk.LABEL_ZONE),
                work.labels.get(wk.LABEL_CAPACITY_TYPE),
                extra={
                    "decision": "launched",
                    "nodeclaim": work.name,
                    "instance_type": work.labels.get(wk.LABEL_INSTANCE_TYPE),
                    "zone": work.labels.get(wk.LABEL_ZONE),
                    "capacity_type": work.labels.get(wk.LABEL_CAPACITY_TYPE),
                    "price_overlaid": wk.ANNOTATION_PRICE_OVERLAY_APPLIED in (work.claim.metadata.annotations or {}),
                },
            )
        elif isinstance(outcome, InsufficientCapacityError):
            self._delete(work, "InsufficientCapacityError", outcome, INSUFFICIENT_CAPACITY, result)
        elif isinstance(outcome, NodeClassNotReadyError):
            self._delete(work, "NodeClassNotReady", outcome, NODECLASS_NOT_READY, result)
        elif isinstance(outcome, CreateError | NodeClaimNotFoundError):
            reason = outcome.reason if isinstance(outcome, CreateError) else "LaunchFailed"
            work.set(LAUNCHED, "Unknown", reason, truncate(str(outcome)))
            result.failed[work.name] = f"{reason}: {outcome}"
            log.warning("launching nodeclaim %s failed: %s", work.name, outcome)
        else:  # transient: the next pass tries again with the same UID, hence the same instance
            result.failed[work.name] = f"{type(outcome).__name__}: {outcome}"
            log.warning("launching nodeclaim %s failed for now: %s", work.name, outcome)

    def _delete(
        self, work: ClaimWork, event_reason: str, error: CloudProviderError, reason: str, result: LaunchResult
    ) -> None:
        message = f"NodeClaim {work.name} event: {truncate(str(error))}"
        self._cluster.record_event(Event(work.ref, event_reason, message, "Warning"))
        log.warning(
            "deleting nodeclaim %s: %s",
            work.name,
            error,
            extra={"decision": "launch-failed", "nodeclaim": work.name, "reason": event_reason, "error": str(error)},
        )
        self._cluster.delete(work.ref)
        work.deleted = True
        result.deleted.setdefault(reason, []).append(work.name)
