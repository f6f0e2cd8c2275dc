"""Would the pods of some candidate nodes fit elsewhere, and on what new capacity? Pure.

One :class:`Rescheduler` per pass indexes the cluster once (Karpenter's scheduler over the nodes, in-flight
NodeClaims and pending pods the provisioner sees); each :meth:`Rescheduler.reschedule` then schedules the candidates'
pods as if those nodes were gone. Pending pods take part, as in Karpenter, so that a consolidation never takes
the room they are about to be given, and so do the pods of nodes already going (being deleted, or taken by an
earlier command that waits for its replacements: Karpenter's MarkedForDeletion), which the room those
replacements hold is for. The new NodeClaims that hold a candidate's pod, or a displaced pod (whose room a
candidate's pod may have taken), are the candidates' replacements.

CapacityBuffers' virtual pods take part as pending pods do (Karpenter injects them into its pending pods), and
count as demand: the room buffers hold on nodes now (where the provisioner's own scheduling puts their virtual
pods, ``buffer_hosts``) must stay, so a new NodeClaim holding such a virtual pod (its node went, or a candidate's
pods took its room) is a replacement too, and a node holding only buffer room is not empty.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from autoscaler.apis.autoscaling.capacitybuffer import is_virtual_pod
from autoscaler.apis.v1.nodepool import NodePool
from autoscaler.cloudprovider import InstanceType, OfferingKey
from autoscaler.controllers.disruption.candidates import Candidate
from autoscaler.controllers.disruption.verification import PlacementCheck, check_placements
from autoscaler.controllers.orchestration.record import is_marked
from autoscaler.controllers.state import ClusterState
from autoscaler.controllers.state.inflight import in_flight
from autoscaler.controllers.state.pods import opts_out, pod_ref
from autoscaler.kube.objects import Pod
from autoscaler.scheduling import NewNodeClaim, PodRef, Scheduler
from autoscaler.scheduling.result import SchedulingResult


@dataclass
class Rescheduling:
    replacements: list[NewNodeClaim] = field(default_factory=list)  # new NodeClaims holding candidates' pods
    failures: dict[PodRef, str] = field(default_factory=dict)  # candidates' pods that fit nowhere, and why
    placed: SchedulingResult | None = None  # the candidates' pods' placements (for the placement checks)
    pods: list[Mapping[str, Any]] = field(default_factory=list)  # the candidates' pods
    excluded: frozenset[str] = frozenset()  # the nodes the simulation left out

    @property
    def schedulable(self) -> bool:
        return not self.failures

    @staticmethod
    def served(new: NewNodeClaim, candidates: Sequence[Candidate]) -> list[Candidate]:
        """The candidates ``new`` stands in for: those of its own NodePool (which pods of theirs land on it and which
        on the nodes left is the packing's choice) and those of other NodePools some of whose pods it holds. A
        candidate of another NodePool whose pods all fit elsewhere is a deletion of its own. All of them when that
        leaves none (``new`` holds pods of nodes already going, whose room the candidates' pods took)."""
        held = set(new.pods)
        return [
            c
            for c in candidates
            if c.nodepool.name == new.nodepool or held.intersection(pod_ref(p) for p in [*c.pods, *c.buffer_pods])
        ] or list(candidates)

    def failure_text(self, shown: int = 3) -> str:
        items = list(self.failures.items())
        text = "; ".join(f"pod {ref.namespace}/{ref.name}: {why}" for ref, why in items[:shown])
        return text + (f" (and {len(items) - shown} more)" if len(items) > shown else "")


class Rescheduler:
    def __init__(
        self,
        state: ClusterState,
        nodepools: Sequence[NodePool],
        instance_types: Mapping[str, Sequence[InstanceType]],
        unavailable: frozenset[OfferingKey],
        now: datetime,
        *,
        checks: Sequence[PlacementCheck] = (check_placements,),
    ) -> None:
        pending = [p for p in [*state.pending_pods, *state.buffer_pods] if not opts_out(p)]
        flight = in_flight(state.nodeclaims, state.nodes, pending, instance_types, now=now)
        self._pending = flight.pending
        marked = {c.status.node_name for c in state.nodeclaims if is_marked(c) and c.status and c.status.node_name}
        self._displaced = state.reschedulable_pods(marked)
        self._going = {Pod(p).node_name for p in self._displaced}
        self.snapshot = state.snapshot(nodepools, instance_types, flight, unavailable)
        self.scheduler = Scheduler(self.snapshot)
        self._checks = checks
        self.buffer_hosts = self._buffer_hosts() if state.buffer_pods else {}
        self._buffered = {pod_ref(p) for pods in self.buffer_hosts.values() for p in pods}

    def _buffer_hosts(self) -> dict[str, list[Mapping[str, Any]]]:
        """The nodes the buffers' virtual pods fit on as the provisioner would place them (after the real pending
        pods), node name -> those virtual pods."""
        virtual = {pod_ref(p): p for p in self._pending if is_virtual_pod(p)}
        placed = self.scheduler.solve([*self._displaced, *self._pending], excluded_nodes=self._going).placements
        hosts: dict[str, list[Mapping[str, Any]]] = {}
        for ref, where in placed.items():
            if ref in virtual and where.kind == "node":
                hosts.setdefault(where.name, []).append(virtual[ref])
        return hosts

    def reschedule(self, candidates: Sequence[Candidate]) -> Rescheduling:
        pods = [p for c in candidates for p in c.pods]
        ours = {pod_ref(p) for p in pods}
        held = ours | {pod_ref(p) for p in self._displaced}  # a displaced pod whose room a candidate's pod took
        held |= self._buffered  # buffer room nodes hold now: taken by a candidate's pods, it must be replaced
        excluded = {c.node_name for c in candidates} | {c.name for c in candidates} | self._going
        solved = [*pods, *self._displaced, *self._pending]
        result = self.scheduler.solve(solved, excluded_nodes=excluded)
        rescheduling = Rescheduling(
            replacements=[n for n in result.new_nodeclaims if held.intersection(n.pods)],
            failures={ref: error.message for ref, error in result.unschedulable.items() if ref in ours},
        )
        if rescheduling.schedulable:
            rescheduling.placed, rescheduling.pods = _only(result, ours), pods
            rescheduling.excluded = frozenset(excluded)
        return rescheduling

    def problems(self, rescheduling: Rescheduling) -> list[str]:
        """What the placement checks find wrong with where ``rescheduling`` put the candidates' pods."""
        if rescheduling.placed is None:
            return []
        found: list[str] = []
        for check in self._checks:
            found += check(self.snapshot, rescheduling.pods, rescheduling.placed, rescheduling.excluded)
        return found


def _only(result: SchedulingResult, pods: set[PodRef]) -> SchedulingResult:
    """``result`` narrowed to the placements of ``pods`` (and the new NodeClaims they are on)."""
    placements = {ref: where for ref, where in result.placements.items() if ref in pods}
    hosts = {where.name for where in placements.values() if where.kind == "new"}
    return dataclasses.replace(
        result,
        placements=placements,
        new_nodeclaims=[n for n in result.new_nodeclaims if n.hostname in hosts],
        unschedulable={},
    )
