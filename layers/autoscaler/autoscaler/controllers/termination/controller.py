"""The termination executor: advance every terminating NodeClaim and Node by whatever steps are possible now.

A sweep reads the cluster, and for each terminating pair (NodeClaim and its Node) runs the steps below in
order, stopping at the first that must wait. Every step checks the cluster before it writes, so a sweep
that dies anywhere leaves a state from which the next sweep simply continues (docs/termination.md).

1. record the terminationGracePeriod deadline on the NodeClaim (once);
2. delete the Node of a deleted NodeClaim, and the NodeClaim of a deleted Node;
3. taint the Node ``karpenter.sh/disrupted:NoSchedule`` and exclude it from external load balancers;
4. drain: delete the pods whose deadline came, evict the next group (a PDB refusal waits for a later sweep);
5. wait for the drained pods' volumes to detach (unless the deadline has passed);
6. terminate the instance and wait until EC2 reports it shutting down or gone;
7. remove the finalizer from the Node, then from the NodeClaim.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.clock import parse_time, utc_now
from autoscaler.cloudprovider import CloudProvider
from autoscaler.controllers.state.nodes import (
    taints_with_disrupted,
)
from autoscaler.controllers.termination.deadline import (
    deadline_to_record,
    is_deleting,
    termination_deadline,
)
from autoscaler.controllers.termination.drain import DrainPlan, blocking_volume_attachments, plan_drain
from autoscaler.controllers.termination.instance import (
    InstanceState,
    ensure_instance_terminating,
    instance_terminating_since,
    observe_instance,
)
from autoscaler.controllers.termination.pairs import (
    EXCLUDE_FROM_LOAD_BALANCERS_VALUE,
    KubeObject,
    TerminatingPair,
    has_termination_finalizer,
    is_excluded_from_load_balancers,
    terminating_pairs,
)
from autoscaler.controllers.termination.pods import PodRef
from autoscaler.controllers.termination.progress import Progress, Stage, SweepResult, TerminationReason
from autoscaler.kube.objects import Node
from autoscaler.kube.port import Cluster, ConflictError, Event, EvictionOutcome, NotFoundError, ObjectRef
from autoscaler.metrics import (
    EVICTION_REQUESTS,
    FOREIGN_INSTANCES_SKIPPED,
    INSTANCE_TERMINATION_DURATION,
    NODE_TERMINATION_DURATION,
    NODECLAIM_TERMINATION_DURATION,
    NODECLAIMS_TERMINATED,
    NODES_TERMINATED,
    PODS_DELETED_AT_DEADLINE,
    TERMINATION_ERRORS,
    MetricPoint,
)

logger = logging.getLogger(__name__)

# Time kept back at the end of an invocation: the longest one pair's steps should take (a node of 110 pods
# at ~20 ms per eviction is about 2 s; API retries with backoff can add several seconds).
RESERVED_SECONDS = 20.0
_EVICTION_CODES = {EvictionOutcome.EVICTED: "200", EvictionOutcome.BLOCKED: "429", EvictionOutcome.GONE: "404"}


def _pod_ref(pod: PodRef) -> ObjectRef:
    return ObjectRef("Pod", pod.name, pod.namespace, pod.uid)


class TerminationController:
    """Drives Karpenter's termination (node finalizer + NodeClaim finalizer) one sweep at a time.

    ``sweep`` never raises for one pair's failure: it records it in the result and goes on with the others.
    Listing the cluster is the only failure that ends a sweep (nothing can be decided without it). Each pair's
    metric points are on its Progress (``metrics.metric_points`` gathers them for the handler)."""

    def __init__(self, cluster: Cluster, cloud: CloudProvider, *, clock: Callable[[], datetime] = utc_now) -> None:
        self._cluster = cluster
        self._cloud = cloud
        self._clock = clock

    def sweep(self, seconds_left: Callable[[], float] | None = None) -> SweepResult:
        """Advance every terminating pair, oldest first. With ``seconds_left`` (the invocation's remaining
        time), pairs are no longer started once less than ``RESERVED_SECONDS`` remain: they are reported
        DEFERRED and taken by the next sweep, instead of the invocation being killed half way."""
        progress = []
        for pair in terminating_pairs(self._cluster.nodeclaims(), self._cluster.nodes()):
            if seconds_left is not None and seconds_left() < RESERVED_SECONDS:
                progress.append(self._progress(pair, Stage.DEFERRED))
                continue
            progress.append(self.advance(pair))
        return SweepResult(tuple(progress))

    def advance(self, pair: TerminatingPair) -> Progress:
        """Run every step of ``pair`` that can run now; report where it stopped."""
        progress = self._progress(pair, Stage.DRAINING)
        try:
            self._advance(pair, progress)
        except (ConflictError, NotFoundError) as error:
            progress.stage = Stage.RETRY
            logger.info("termination of %s changed under the step: %s", pair.name, error)
        except Exception as error:  # one pair's failure must not stop the others; the next sweep retries it
            progress.stage, progress.error = Stage.FAILED, f"{type(error).__name__}: {error}"
            logger.exception("termination of %s failed", pair.name)
            _count(progress, TERMINATION_ERRORS, error=type(error).__name__)
        return progress

    @staticmethod
    def _progress(pair: TerminatingPair, stage: Stage) -> Progress:
        return Progress(
            pair.nodeclaim.name if pair.nodeclaim else None, Node(pair.node).name if pair.node else None, stage
        )

    # --- the steps ---------------------------------------------------------------------------------------
    def _advance(self, pair: TerminatingPair, progress: Progress) -> None:
        now = self._clock()
        nodeclaim, node = pair.nodeclaim, pair.node
        nodeclaim_deleting = nodeclaim is not None and is_deleting(nodeclaim)
        if nodeclaim is not None and nodeclaim_deleting:
            nodeclaim = self._record_deadline(nodeclaim)
        instance: InstanceState | None = None
        node_deleting = node is not None and Node(node).deleting
        if node is not None and nodeclaim is not None and node_deleting and not nodeclaim_deleting:
            self._cluster.delete(nodeclaim.ref)  # deleting a Node deletes its NodeClaim
            nodeclaim_deleting = True
        elif node is not None and not node_deleting:
            gone = not self._cluster.delete(Node(node).ref)  # deleting a NodeClaim deletes its Node
            if gone or not Node(node).finalizers:
                node = None
        if node is not None:
            finalizers = Node(node).finalizers
            if not has_termination_finalizer(finalizers):
                progress.stage = Stage.AWAITING_NODE_DELETION  # someone else's finalizer holds it
                return
            instance = self._finalize_node(nodeclaim, node, now, progress)
            if instance is None:
                return
            if set(finalizers) - {wk.FINALIZER_TERMINATION}:
                progress.stage = Stage.AWAITING_NODE_DELETION
                return
        if nodeclaim is not None and nodeclaim_deleting and has_termination_finalizer(nodeclaim.metadata.finalizers):
            if instance is None:
                instance = self._terminate_instance(nodeclaim, now, progress)
            if instance is InstanceState.RUNNING:
                progress.stage = Stage.AWAITING_INSTANCE_TERMINATION
                return
            self._remove_nodeclaim_finalizer(nodeclaim, now, progress)
        progress.stage = Stage.FINISHED

    def _record_deadline(self, nodeclaim: NodeClaim) -> NodeClaim:
        deadline = deadline_to_record(nodeclaim)
        if deadline is None:
            return nodeclaim
        self._cluster.patch_metadata(nodeclaim.ref, annotations={wk.ANNOTATION_TERMINATION_TIMESTAMP: deadline})
        logger.info("recorded termination deadline %s on NodeClaim %s", deadline, nodeclaim.name)
        self._cluster.record_event(
            Event(
                nodeclaim.ref,
                "TerminationGracePeriodExpiring",
                f"All pods will be deleted by {deadline}",
                "Warning",
            )
        )
        updated = nodeclaim.model_copy(deep=True)
        updated.metadata.annotations = {
            **(updated.metadata.annotations or {}),
            wk.ANNOTATION_TERMINATION_TIMESTAMP: deadline,
        }
        return updated

    def _finalize_node(
        self, nodeclaim: NodeClaim | None, node: KubeObject, now: datetime, progress: Progress
    ) -> InstanceState | None:
        """Steps 3 to 7 for the Node; the instance's state once its finalizer is removed, None while waiting."""
        deadline = termination_deadline(nodeclaim)
        self._taint(node)
        view = Node(node)
        name = view.name
        pods = self._cluster.pods(name)
        plan = plan_drain(pods, now, deadline)
        self._apply(plan, node, deadline, progress)
        instance: InstanceState | None = None
        if not plan.drained:
            progress.stage, progress.waiting_pods = Stage.DRAINING, len(plan.waiting)
            provider_id = view.provider_id
            # A NotReady node whose instance is gone has nothing left to drain: its pods are already dead.
            if view.ready or not provider_id:
                return None
            instance = observe_instance(self._cloud, provider_id)
            if instance is not InstanceState.GONE:
                return None
            reason = TerminationReason.INSTANCE_GONE
        else:
            if deadline is None or now < deadline:
                claims = self._cluster.persistent_volume_claims()
                attachments = blocking_volume_attachments(name, self._cluster.volume_attachments(), pods, claims, now)
                if attachments:
                    progress.stage = Stage.AWAITING_VOLUME_DETACHMENT
                    return None
            reason = (
                TerminationReason.GRACE_PERIOD_EXPIRED if deadline and now >= deadline else TerminationReason.DRAINED
            )
            if nodeclaim is not None:
                instance = self._terminate_instance(nodeclaim, now, progress)
                if instance is InstanceState.RUNNING:
                    progress.stage = Stage.AWAITING_INSTANCE_TERMINATION
                    return None
        self._remove_node_finalizer(node, nodeclaim, reason, now, progress)
        return instance or InstanceState.GONE

    def _taint(self, node: KubeObject) -> None:
        view = Node(node)
        taints = taints_with_disrupted(view)
        if taints is not None:
            self._cluster.set_node_taints(view.name, taints)
            logger.info("tainted node %s %s:NoSchedule", view.name, wk.TAINT_DISRUPTED)
        if not is_excluded_from_load_balancers(view):
            self._cluster.patch_metadata(
                view.ref, labels={wk.LABEL_EXCLUDE_FROM_LOAD_BALANCERS: EXCLUDE_FROM_LOAD_BALANCERS_VALUE}
            )

    def _apply(self, plan: DrainPlan, node: KubeObject, deadline: datetime | None, progress: Progress) -> None:
        for deletion in plan.delete:
            if self._cluster.delete(_pod_ref(deletion.pod), grace_period_seconds=deletion.grace_period_seconds):
                progress.deleted_at_deadline += 1
                _count(progress, PODS_DELETED_AT_DEADLINE)
                self._cluster.record_event(
                    Event(
                        _pod_ref(deletion.pod),
                        "Disrupted",
                        f"Deleting the pod to meet the node's termination deadline {deadline}, with "
                        f"{deletion.grace_period_seconds}s of grace; this bypasses its PDB and do-not-disrupt",
                    )
                )
        for pod in plan.evict:
            outcome = self._cluster.evict(pod.namespace, pod.name)
            _count(progress, EVICTION_REQUESTS, code=_EVICTION_CODES[outcome])
            if outcome is EvictionOutcome.EVICTED:
                progress.evicted += 1
                self._cluster.record_event(Event(_pod_ref(pod), "Evicted", "Evicted pod"))
            elif outcome is EvictionOutcome.BLOCKED:
                progress.blocked_by_pdb += 1
        if progress.blocked_by_pdb:
            self._cluster.record_event(
                Event(
                    Node(node).ref,
                    "FailedDraining",
                    f"Failed to drain node, {progress.blocked_by_pdb} evictions are blocked by PodDisruptionBudgets",
                    "Warning",
                )
            )

    def _terminate_instance(self, nodeclaim: NodeClaim, now: datetime, progress: Progress) -> InstanceState:
        state = ensure_instance_terminating(self._cluster, self._cloud, nodeclaim, now, lambda: self._reread(nodeclaim))
        logger.info("instance of NodeClaim %s is %s", nodeclaim.name, state.value)
        if state is InstanceState.FOREIGN:
            _count(progress, FOREIGN_INSTANCES_SKIPPED, nodepool=_label(nodeclaim, wk.LABEL_NODEPOOL))
        return state

    def _reread(self, nodeclaim: NodeClaim) -> NodeClaim | None:
        return self._cluster.nodeclaim(nodeclaim.name)

    def _remove_node_finalizer(
        self,
        node: KubeObject,
        nodeclaim: NodeClaim | None,
        reason: TerminationReason,
        now: datetime,
        progress: Progress,
    ) -> None:
        view = Node(node)
        self._cluster.patch_metadata(view.ref, remove_finalizers=[wk.FINALIZER_TERMINATION])
        logger.info(
            "removed the termination finalizer of node %s (%s)",
            view.name,
            reason.value,
            extra={
                "decision": "node-terminated",
                "node": view.name,
                "nodeclaim": nodeclaim.name if nodeclaim else None,
                "reason": reason.value,
            },
        )
        nodepool = view.labels.get(wk.LABEL_NODEPOOL) or _label(nodeclaim, wk.LABEL_NODEPOOL)
        _count(progress, NODES_TERMINATED, nodepool=nodepool, reason=reason.value)
        _duration(progress, NODE_TERMINATION_DURATION, view.deletion_timestamp, now, nodepool=nodepool)

    def _remove_nodeclaim_finalizer(self, nodeclaim: NodeClaim, now: datetime, progress: Progress) -> None:
        try:
            self._cluster.patch_metadata(nodeclaim.ref, remove_finalizers=[wk.FINALIZER_TERMINATION])
        except NotFoundError:
            return  # another invocation finished it
        logger.info("removed the termination finalizer of NodeClaim %s", nodeclaim.name)
        nodepool = _label(nodeclaim, wk.LABEL_NODEPOOL)
        capacity_type = _label(nodeclaim, wk.LABEL_CAPACITY_TYPE)
        _count(progress, NODECLAIMS_TERMINATED, nodepool=nodepool, capacity_type=capacity_type)
        _duration(
            progress, NODECLAIM_TERMINATION_DURATION, nodeclaim.metadata.deletion_timestamp, now, nodepool=nodepool
        )
        _duration(
            progress, INSTANCE_TERMINATION_DURATION, instance_terminating_since(nodeclaim), now, nodepool=nodepool
        )


def _count(progress: Progress, name: str, **dimensions: str) -> None:
    progress.metrics.append(MetricPoint(name, 1, dimensions=tuple(dimensions.items())))


def _duration(progress: Progress, name: str, since: str | None, now: datetime, **dimensions: str) -> None:
    since_at = parse_time(since)
    if since_at is None:
        return
    seconds = (now - since_at).total_seconds()
    progress.metrics.append(MetricPoint(name, max(seconds, 0.0), "Seconds", tuple(dimensions.items())))


def _label(nodeclaim: NodeClaim | None, key: str) -> str:
    return ((nodeclaim.metadata.labels or {}) if nodeclaim else {}).get(key, "")
