"""Carrying a batch's plans out through the ports, stage by stage across the whole batch.

Every node of the batch is cordoned first (the urgent write: nothing new lands on a node with two minutes
to live), then every NodeClaim is deleted (which starts its drain), then annotations and unavailable
offerings; within these stages the instances are independent and I/O bound, so they run in parallel. The
batch's events go last, all in one call (the adapter pipelines them on one connection).
A failure stops that instance's later stages only; what it already did is remembered in the index, so the
retry of its messages redoes only what is missing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import TypeVar

from autoscaler.cloudprovider.errors import CloudProviderError
from autoscaler.cloudprovider.port import UnavailableOfferings
from autoscaler.controllers.interruption.decisions import Action, InstancePlan
from autoscaler.controllers.interruption.index import ClusterIndex
from autoscaler.controllers.interruption.report import InstanceResult
from autoscaler.controllers.state.nodes import DISRUPTED_TAINT
from autoscaler.kube.objects import Node
from autoscaler.kube.port import Cluster, ClusterError, Event, KubeObject, ObjectRef

log = logging.getLogger(__name__)
UNAVAILABLE_REASON = "SpotInterruptionWarning"
Item = TypeVar("Item")
EVENTS_PER_CALL = 16  # events written together on one connection; the groups go in parallel


@dataclass
class _Progress:
    plan: InstancePlan
    node: KubeObject | None
    cordoned_at: datetime | None = None
    acted_at: datetime | None = None
    marked: bool = False
    error: str | None = None

    @property
    def nodeclaim_ref(self) -> ObjectRef:
        return self.plan.instance.nodeclaim.ref

    def result(self) -> InstanceResult:
        plan, node_ref = self.plan, node_ref_of(self.node)
        return InstanceResult(
            plan.instance.instance_id,
            plan.instance.nodeclaim.name,
            node_ref.name if node_ref else None,
            plan.kind,
            plan.action,
            plan.message_ids,
            cordoned_at=self.cordoned_at,
            acted_at=self.acted_at,
            marked_unavailable=self.marked,
            error=self.error,
            note=plan.note,
        )


def node_ref_of(node: KubeObject | None) -> ObjectRef | None:
    view = Node(node) if node is not None else None
    return view.ref if view is not None and view.name else None


class PlanExecutor:
    def __init__(
        self,
        cluster: Cluster,
        unavailable: UnavailableOfferings,
        clock: Callable[[], datetime],
        executor: Callable[[], Executor | None],
    ) -> None:
        self._cluster = cluster
        self._unavailable = unavailable
        self._clock = clock
        self._executor = executor  # None: run in this thread

    def run(self, plans: Sequence[InstancePlan], index: ClusterIndex) -> list[InstanceResult]:
        progress = [_Progress(plan, plan.instance.node) for plan in plans]
        stages: tuple[tuple[Callable[[InstancePlan], bool], Callable[[_Progress, ClusterIndex], None]], ...] = (
            (lambda plan: plan.cordon and plan.instance.node is not None, self._cordon),
            (lambda plan: plan.delete, self._delete),
            (lambda plan: plan.annotations is not None, self._annotate),
            (lambda plan: plan.unavailable is not None, self._mark_unavailable),
        )
        for applies, stage in stages:
            due = [p for p in progress if p.error is None and applies(p.plan)]
            self._each(due, partial(self._guarded, stage, index=index))
        self._notify([p for p in progress if p.error is None and p.plan.notices])
        for p in progress:
            if p.error is None and p.plan.action is not Action.NONE:
                entry = p.plan.instance
                log.info(
                    "acted on interruption",
                    extra={
                        "decision": "interruption",
                        "instance_id": entry.instance_id,
                        "nodeclaim": entry.nodeclaim.name,
                        "node": entry.node_name,
                        "kind": p.plan.kind.value,
                        "action": p.plan.action.value,
                        "cordoned_at": p.cordoned_at.isoformat() if p.cordoned_at else None,
                        "acted_at": p.acted_at.isoformat() if p.acted_at else None,
                    },
                )
        return [p.result() for p in progress]

    def _each(self, due: Sequence[Item], work: Callable[[Item], None]) -> None:
        executor = self._executor() if len(due) > 1 else None
        if executor is None:
            for p in due:
                work(p)
        else:
            list(executor.map(work, due))

    def _guarded(self, stage: Callable[[_Progress, ClusterIndex], None], p: _Progress, *, index: ClusterIndex) -> None:
        entry = p.plan.instance
        try:
            stage(p, index)
        except (ClusterError, CloudProviderError) as error:
            p.error = f"{type(error).__name__}: {error}"
            log.warning(
                "interruption action failed, its messages will be retried",
                extra={"instance_id": entry.instance_id, "nodeclaim": entry.nodeclaim.name, "error": p.error},
            )
        except Exception as error:  # a bug must not lose the other instances of the batch
            p.error = f"{type(error).__name__}: {error}"
            log.exception("unexpected error acting on an interruption", extra={"instance_id": entry.instance_id})

    # --- the stages -------------------------------------------------------------------------------
    def _cordon(self, p: _Progress, index: ClusterIndex) -> None:
        assert p.node is not None
        p.node = self._cluster.cordon(p.node, DISRUPTED_TAINT)
        p.cordoned_at = p.acted_at = self._clock()
        index.record_node(p.plan.instance.instance_id, p.node)

    def _delete(self, p: _Progress, index: ClusterIndex) -> None:
        self._cluster.delete(p.nodeclaim_ref)
        p.acted_at = p.acted_at or self._clock()
        index.record_deleting(p.plan.instance.instance_id)

    def _annotate(self, p: _Progress, index: ClusterIndex) -> None:
        entry, annotations = p.plan.instance, p.plan.annotations or {}
        self._cluster.patch_metadata(p.nodeclaim_ref, annotations=annotations)
        p.acted_at = p.acted_at or self._clock()
        annotated = entry.nodeclaim.model_copy(deep=True)
        merged = {**(entry.nodeclaim.metadata.annotations or {}), **annotations}
        annotated.metadata.annotations = {key: value for key, value in merged.items() if value is not None}
        index.record_nodeclaim(entry.instance_id, annotated)

    def _mark_unavailable(self, p: _Progress, _: ClusterIndex) -> None:
        assert p.plan.unavailable is not None
        self._unavailable.mark_unavailable(p.plan.unavailable, UNAVAILABLE_REASON)
        p.marked = True

    def _record(self, events: Sequence[Event]) -> None:
        try:
            self._cluster.record_events(events)
        except Exception:  # a bug in a best-effort write must not turn the batch's actions into failures
            log.exception("recording the interruption events failed")

    def _notify(self, noticed: Sequence[_Progress]) -> None:
        """The batch's events last, in groups written in parallel: the port writes a group in one go (pipelined on
        one connection, answers unread; an API server serves a connection's requests one after another, so groups
        keep a large batch's events from queueing behind each other), and logs and swallows a failed one: an
        event never fails the action."""
        events = [
            Event(ref, notice.reason, notice.message, notice.type, notice.action)
            for p in noticed
            for notice in p.plan.notices
            for ref in (p.nodeclaim_ref, node_ref_of(p.node))
            if ref is not None
        ]
        groups = [events[start : start + EVENTS_PER_CALL] for start in range(0, len(events), EVENTS_PER_CALL)]
        self._each(groups, self._record)
        now = self._clock()
        for p in noticed:
            p.acted_at = p.acted_at or now
