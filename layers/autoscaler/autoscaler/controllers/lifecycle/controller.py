"""The NodeClaim lifecycle (Karpenter's nodeclaim lifecycle controller), one pass over every NodeClaim.

Per NodeClaim, in order and on one in-memory copy: the finalizer ``karpenter.sh/termination``, launch,
registration (then the instance's registration tags), initialization, liveness. Then one status write
(guarded by the resourceVersion read) and one merge patch of labels and annotations, only when something
changed. Every step decides from the NodeClaim's conditions and the cluster as read, so a pass repeated,
retried or cut short at any point converges on the same state; a step that fails leaves its condition for
the next pass. Decisions only: Kubernetes through the Cluster port, the cloud through LifecycleCloud.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from autoscaler import metrics as m
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.conditions import READY, is_true
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.clock import utc_now
from autoscaler.cloudprovider.overlays import Overlays
from autoscaler.controllers.concurrency import each
from autoscaler.controllers.lifecycle.cloud import LifecycleCloud
from autoscaler.controllers.lifecycle.initialization import Initialization
from autoscaler.controllers.lifecycle.launch import Launch
from autoscaler.controllers.lifecycle.liveness import LIVENESS, Liveness
from autoscaler.controllers.lifecycle.metrics import Counts
from autoscaler.controllers.lifecycle.registration import Registration, Tagging, nodes_by_provider_id
from autoscaler.controllers.lifecycle.work import ClaimWork
from autoscaler.kube.objects import Node
from autoscaler.kube.port import Cluster, ClusterError, ConflictError, KubeObject, NotFoundError
from autoscaler.metrics import MetricPoint

log = logging.getLogger(__name__)
LAUNCH_RESERVE_SECONDS = 20.0  # no new launch call starts with less time left: its writes must fit


def needs_step(claim: NodeClaim) -> bool:
    """False for NodeClaims being deleted (termination's) and for those fully through the lifecycle."""
    if claim.metadata.deletion_timestamp:
        return False
    annotations = claim.metadata.annotations or {}
    labels = claim.metadata.labels or {}
    status = claim.status
    return (
        wk.FINALIZER_TERMINATION not in (claim.metadata.finalizers or [])
        or not is_true(status.conditions if status else None, READY)
        or annotations.get(wk.ANNOTATION_INSTANCE_TAGGED) != "true"
        or (bool(status and status.provider_id) and wk.LABEL_INSTANCE_TYPE not in labels)
    )


@dataclass
class LifecycleResult:
    launched: list[str] = field(default_factory=list)
    registered: list[str] = field(default_factory=list)
    initialized: list[str] = field(default_factory=list)
    tagged: int = 0
    untagged: list[str] = field(default_factory=list)  # registered, but tagging the instance was refused
    deleted: dict[str, list[str]] = field(default_factory=dict)  # reason (insufficient_capacity, ...) -> names
    failed: dict[str, str] = field(default_factory=dict)  # NodeClaim -> what failed; the next pass retries
    deferred: int = 0  # launches left for the next pass (time ran short)
    examined: int = 0
    points: list[MetricPoint] = field(default_factory=list)  # the metrics of the pass, for the handler


class LifecycleController:
    def __init__(
        self,
        cluster: Cluster,
        cloud: LifecycleCloud,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self._cluster, self._clock = cluster, clock
        self._launch = Launch(cluster, cloud)
        self._registration = Registration(cluster, cloud)
        self._initialization = Initialization(cluster)
        self._liveness = Liveness(cluster)

    def reconcile(
        self,
        nodeclaims: Sequence[NodeClaim],
        nodes: Sequence[KubeObject],
        time_left: Callable[[], float] = lambda: math.inf,
        overlays: Overlays | None = None,
    ) -> LifecycleResult:
        """One pass over ``nodeclaims`` (as read, with resourceVersions) against ``nodes`` (as read); launches on
        instance types with the pass's evaluated ``overlays``."""
        now = self._clock()
        result = LifecycleResult()
        works = [ClaimWork(claim, now) for claim in self._with_finalizers([c for c in nodeclaims if needs_step(c)])]
        result.examined = len(works)
        launched = self._launch.run(works, time_left, LAUNCH_RESERVE_SECONDS, overlays)
        result.launched, result.failed, result.deferred = launched.launched, launched.failed, launched.deferred
        for reason, names in launched.deleted.items():
            result.deleted.setdefault(reason, []).extend(names)
        by_provider_id = nodes_by_provider_id(nodes)
        by_name = {Node(n).name: n for n in nodes}
        for work in works:
            try:
                self._step(work, by_provider_id, by_name, result)
            except ClusterError as error:  # e.g. RBAC refusing the node patch: this claim waits, the others go on
                log.warning("nodeclaim %s: lifecycle step failed: %s", work.name, error)
                result.failed.setdefault(work.name, f"lifecycle step failed: {error}")
        for work, failure in zip(works, each(self._write, works), strict=True):
            if isinstance(failure, Exception):
                raise failure  # not a cluster error: a bug, not to be swallowed
            if failure is not None:
                result.failed.setdefault(work.name, failure)
        self._count(works, result)
        return result

    @staticmethod
    def _count(works: Sequence[ClaimWork], result: LifecycleResult) -> None:
        labels = {w.name: w.labels for w in works}
        counts = Counts()

        def pool(claim: str) -> str:
            return labels.get(claim, {}).get(wk.LABEL_NODEPOOL, "")

        for claim in result.launched:
            counts.add(m.NODECLAIMS_LAUNCHED, nodepool=pool(claim))
        for claim in result.registered:
            counts.add(m.NODECLAIMS_REGISTERED, nodepool=pool(claim))
            counts.add(m.NODES_CREATED, nodepool=pool(claim))
        for claim in result.initialized:
            counts.add(m.NODECLAIMS_INITIALIZED, nodepool=pool(claim))
        for claim in result.untagged:
            counts.add(m.INSTANCE_TAGGING_FAILURES, nodepool=pool(claim))
        for reason, names in result.deleted.items():
            for claim in names:
                capacity_type = labels.get(claim, {}).get(wk.LABEL_CAPACITY_TYPE, "")
                counts.add(m.NODECLAIMS_DISRUPTED, reason=reason, nodepool=pool(claim), capacity_type=capacity_type)
        result.points = counts.points()

    def _with_finalizers(self, claims: Sequence[NodeClaim]) -> list[NodeClaim]:
        """Add the termination finalizer where it is missing (ours are created with it; others may not be),
        re-reading those NodeClaims so that the status write carries their new resourceVersion."""
        ready = []
        for claim in claims:
            if wk.FINALIZER_TERMINATION in (claim.metadata.finalizers or []):
                ready.append(claim)
                continue
            work = ClaimWork(claim, self._clock())
            try:
                self._cluster.patch_metadata(work.ref, add_finalizers=[wk.FINALIZER_TERMINATION])
                fresh = self._cluster.nodeclaim(claim.name)
            except ClusterError as error:
                log.warning("adding the finalizer to nodeclaim %s failed: %s", claim.name, error)
                continue
            if fresh is not None and not fresh.metadata.deletion_timestamp:
                ready.append(fresh)
        return ready

    def _step(
        self,
        work: ClaimWork,
        by_provider_id: Mapping[str, list[KubeObject]],
        by_name: dict[str, KubeObject],
        result: LifecycleResult,
    ) -> None:
        """Registration, tagging, initialization and liveness of one NodeClaim."""
        synced = self._registration.run(work, by_provider_id)
        if synced is not None:
            by_name[Node(synced).name] = synced
            result.registered.append(work.name)
        tagging = self._registration.tag(work)
        result.tagged += tagging is Tagging.TAGGED
        if tagging is Tagging.FAILED:
            result.untagged.append(work.name)
        if self._initialization.run(work, by_name):
            result.initialized.append(work.name)
        if self._liveness.run(work):
            result.deleted.setdefault(LIVENESS, []).append(work.name)

    def _write(self, work: ClaimWork) -> str | None:
        """Write what changed: the status (guarded by the resourceVersion read), then labels and annotations.
        Returns what failed, for the next pass to retry."""
        if work.deleted:
            return None
        failed = None
        try:
            if work.status_changed():
                self._cluster.write_status(work.claim)
        except NotFoundError:
            return None
        except ConflictError as error:
            # Someone else wrote it since we read it: the next pass recomputes from the new state. The labels
            # below are still safe to merge (the launch they come from is keyed by the NodeClaim).
            failed = f"status write conflicted: {error}"
        except ClusterError as error:
            return f"status write failed: {error}"
        labels, annotations = work.label_changes(), work.annotation_changes()
        if labels or annotations:
            try:
                self._cluster.patch_metadata(work.ref, labels=labels or None, annotations=annotations or None)
            except NotFoundError:
                return failed
            except ClusterError as error:
                return failed or f"label patch failed: {error}"
        return failed
