"""The scheduling simulation: which pods go to existing capacity, and which new NodeClaims to launch.

Usage::

    result = Scheduler(snapshot).solve(pending_pods)

Pods are tried largest first (CPU, then memory, then age). Each pod tries existing nodes and in-flight
NodeClaims, then the new NodeClaims of this pass (fewest pods first), then a new NodeClaim from each
NodePool by weight. A pod that fits nowhere has one preference relaxed and tries again; a pod that
still fits nowhere is queued again after the others, and the pass ends when a full round places
nothing. See ``docs/scheduling.md`` for the algorithm and how it relates to Karpenter's.
"""

from __future__ import annotations

import gc
from collections import deque
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from autoscaler.apis.resources import Resources, format_resources, parse_resources
from autoscaler.apis.v1 import labels as wk
from autoscaler.scheduling.candidates import ClaimQueue, HostIndex
from autoscaler.scheduling.daemons import daemonset_pods
from autoscaler.scheduling.existing import ExistingNodeState, node_requirements
from autoscaler.scheduling.finalize import finalize
from autoscaler.scheduling.instancetypes import OFFERING_LABELS, InstanceTypeIndex
from autoscaler.scheduling.nodeclaim import NewClaim, NodeClaimTemplate
from autoscaler.scheduling.pods import PodInfo, PodParser, PodRef
from autoscaler.scheduling.podstate import PodState
from autoscaler.scheduling.preferences import Preferences
from autoscaler.scheduling.rebalance import rebalance
from autoscaler.scheduling.repack import may_open_nodes, repack
from autoscaler.scheduling.requirements import Requirements
from autoscaler.scheduling.result import Placement, PodError, Rejection, SchedulingResult
from autoscaler.scheduling.snapshot import ClusterSnapshot, NodeView, available, node_views
from autoscaler.scheduling.taints import PREFER_NO_SCHEDULE, Taint
from autoscaler.scheduling.topology import CountedNode, Topology
from autoscaler.scheduling.volumes import VolumeError, VolumeTopology

NODES = "nodes"  # a NodePool limit on the number of nodes


@dataclass(frozen=True)
class SchedulerOptions:
    respect_preferences: bool = True  # False: ignore preferred affinities and ScheduleAnyway spreads
    max_instance_types: int = 60  # instance type options kept per new NodeClaim, cheapest first


def order_nodepools(templates: Iterable[NodeClaimTemplate]) -> list[NodeClaimTemplate]:
    """Highest weight first; equal weights in reverse name order, as Karpenter orders them."""
    return sorted(templates, key=lambda t: (t.weight, t.name), reverse=True)


class Scheduler:
    """Decides placements for pending pods against one :class:`ClusterSnapshot`.

    Construction indexes the snapshot (instance types, DaemonSet overhead, existing nodes) once;
    :meth:`solve` can then run many independent passes, e.g. one per consolidation candidate set.
    """

    def __init__(self, snapshot: ClusterSnapshot, options: SchedulerOptions | None = None) -> None:
        self.snapshot = snapshot
        self.options = options or SchedulerOptions()
        self._parser = PodParser()
        self._daemons, self._skipped = daemonset_pods(snapshot.daemonsets, snapshot.bound_pods, self._parser)
        indexes = {
            np.name: InstanceTypeIndex(snapshot.instance_types.get(np.name, ()), snapshot.unavailable_offerings)
            for np in snapshot.nodepools
        }
        self.well_known = frozenset(
            {*wk.WELL_KNOWN_LABELS, *OFFERING_LABELS, *(k for index in indexes.values() for k in index.label_keys)}
        )
        templates = order_nodepools(
            NodeClaimTemplate(np, indexes[np.name], self._daemons, self.well_known) for np in snapshot.nodepools
        )
        self._all_templates = templates
        self.templates = [t for t in templates if t.mask]
        self._unusable = tuple(
            Rejection(t.name, f"no instance type to launch: {t.explain(t.requirements, {}, t.index.all)}")
            for t in templates
            if not t.mask
        )
        self._limits = {
            np.name: parse_resources(np.spec.limits) for np in snapshot.nodepools if np.spec.limits is not None
        }
        self._preferences = Preferences(any(t[2] == PREFER_NO_SCHEDULE for tp in templates for t in tp.taints))
        self._views, skipped = node_views(snapshot, self._parser)
        self._skipped += skipped
        self._volumes = VolumeTopology(
            snapshot.persistent_volume_claims, snapshot.persistent_volumes, snapshot.storage_classes
        )
        self._universe_cache: dict[str, dict[str, list[tuple[Taint, ...]]]] = {}
        self._node_cache: dict[str, tuple[Requirements, Requirements, Resources]] = {}
        # The typical shape of an instance type, to tell memory-heavy pods from CPU-heavy ones.
        cpu = sum(a.get("cpu", 0) for index in indexes.values() for a in index.allocatable)
        memory = sum(a.get("memory", 0) for index in indexes.values() for a in index.allocatable)
        self.bytes_per_millicore = memory / cpu if cpu else 2**21

    def _node_parts(self, view: NodeView) -> tuple[Requirements, Requirements, Resources]:
        """A node's label requirements, with its hostname, and what it has free: the same for every solve over
        this snapshot (consolidation solves once per candidate set), so computed once."""
        parts = self._node_cache.get(view.name)
        if parts is None:
            labels = Requirements.from_labels(view.labels)
            parts = (labels, node_requirements(view.labels, view.hostname), available(view, self._daemons))
            self._node_cache[view.name] = parts
        return parts

    def _universe(self, key: str) -> dict[str, list[tuple[Taint, ...]]]:
        """The domains of ``key`` NodePools can launch into, each with the taint sets of those NodePools."""
        cached = self._universe_cache.get(key)
        if cached is not None:
            return cached
        domains: dict[str, list[tuple[Taint, ...]]] = {}
        for template in self._all_templates:
            requirement = template.requirements.get(key)
            if requirement is not None and not requirement.complement:
                values = set(requirement.values)
            else:
                values = template.index.domains(key)
                if requirement is not None:
                    values = {v for v in values if requirement.has(v)}
            for value in sorted(values):
                taint_sets = domains.setdefault(value, [])
                if not template.taints:
                    taint_sets[:] = [()]  # an untainted pool makes the domain open to every pod
                elif not taint_sets or taint_sets[0]:
                    taint_sets.append(template.taints)
        self._universe_cache[key] = domains
        return domains

    def solve(
        self,
        pods: Iterable[Mapping[str, Any]],
        *,
        excluded_nodes: Collection[str] = (),
        max_new_nodeclaims: int | None = None,
    ) -> SchedulingResult:
        """Place ``pods`` (Kubernetes JSON). ``excluded_nodes`` (node or NodeClaim names) are left out as
        if already gone; ``max_new_nodeclaims`` caps the new NodeClaims (consolidation allows one).

        Every pod ends up either in ``result.placements`` or in ``result.unschedulable`` with a reason.

        Python's cyclic garbage collector is paused for the pass (and restored after): the pass allocates
        many small objects and makes no reference cycles, yet the collector would keep traversing every
        live object, the caller's pod JSON included, for nothing; that costs about half the run time at
        20,000 pods. Reference counting still frees everything as usual."""
        with _collector_paused():
            return _Pass(self, pods, excluded_nodes, max_new_nodeclaims).run()


class _Pass:
    """One scheduling pass: mutable state that lives for a single ``solve``."""

    def __init__(
        self,
        scheduler: Scheduler,
        pods: Iterable[Mapping[str, Any]],
        excluded: Collection[str],
        max_new: int | None,
    ) -> None:
        self.s = scheduler
        self.max_new = max_new
        self.result = SchedulingResult(skipped=list(scheduler._skipped))
        parsed, failed = scheduler._parser.parse_many(pods)
        for raw, message in failed:
            self.result.unschedulable[_ref(raw)] = PodError((Rejection(None, message),))
        views = [v for v in scheduler._views if v.name not in excluded]
        parts = {v.name: scheduler._node_parts(v) for v in views}
        self.topology = Topology(
            scheduler._universe,
            [CountedNode(v.name, v.labels, v.taints, v.pods, parts[v.name][0]) for v in views if v.nodeclaim is None],
            scheduler.snapshot.namespaces,
            frozenset(p.ref.uid for p in parsed),
            scheduler.options.respect_preferences,
            pending_namespaces=frozenset(p.namespace for p in parsed),
        )
        self.existing = sorted(
            (
                ExistingNodeState(
                    v.name,
                    hostname=v.hostname,
                    labels=v.labels,
                    taints=v.taints,
                    available=dict(parts[v.name][2]),
                    host_ports={port for p in v.pods for port in p.host_ports},
                    initialized=v.initialized,
                    nodeclaim=v.nodeclaim,
                    nodepool=v.nodepool,
                    topology=self.topology,
                    requirements=parts[v.name][1],
                )
                for v in views
            ),
            key=lambda n: n.order,
        )
        self.existing_index: HostIndex[ExistingNodeState] = HostIndex()
        for node in self.existing:
            self.existing_index.add(node)
        self.remaining = self._remaining_limits(views)
        self.claims: ClaimQueue[NewClaim] = ClaimQueue()
        self.states = self._states(parsed)
        self.sequence: list[tuple[PodInfo, Placement]] = []  # placements in order

    def _remaining_limits(self, views: Sequence[Any]) -> dict[str, Resources]:
        remaining = {name: dict(limits) for name, limits in self.s._limits.items()}
        for view in views:
            limits = remaining.get(view.nodepool or "")
            if limits is not None:
                for name in limits:
                    limits[name] -= 1 if name == NODES else view.capacity.get(name, 0)
        return remaining

    def _states(self, pods: list[PodInfo]) -> list[PodState]:
        states = []
        for pod in pods:
            try:
                volumes = self.s._volumes.requirements(pod.raw)
            except VolumeError as error:
                self.result.unschedulable[pod.ref] = PodError((Rejection(None, str(error)),))
                continue
            states.append(PodState(pod, self.topology, volumes, self.topology.inverse_for(pod)))
        return states

    def run(self) -> SchedulingResult:
        queue = deque(sorted(self.states, key=_queue_order))
        requeued_at: dict[str, int] = {}
        errors = self.result.unschedulable
        while queue:
            state = queue[0]
            if requeued_at.get(state.pod.ref.uid) == len(queue):
                break  # a whole round without progress
            queue.popleft()
            error = self._try(state)
            if error is None:
                errors.pop(state.pod.ref, None)
                continue
            errors[state.pod.ref] = error
            state.use(state.pod.constraints, self.topology)  # the next round starts from the original pod
            queue.append(state)
            requeued_at[state.pod.ref.uid] = len(queue)
        claims = list(self.claims.ordered())
        order = [pod for pod, _ in self.sequence]
        rebalance(claims, order)
        self.result.placements = {pod.ref: where for pod, (_, where) in zip(order, self.sequence, strict=True)}
        if claims:
            may_open = may_open_nodes(self.topology)
            claims, moved = repack(claims, self.topology, self.remaining, may_open=may_open, max_claims=self.max_new)
            for hostname, pods in moved.items():
                self.result.placements.update((pod.ref, Placement("new", hostname)) for pod in pods)
        options = self.s.options
        return finalize(
            claims, self.result, max_instance_types=options.max_instance_types, well_known=self.s.well_known
        )

    def _try(self, state: PodState) -> PodError | None:
        while True:
            rejections = self._add(state)
            if rejections is None:
                return None
            relaxed = self.s._preferences.relax(state.constraints)
            if relaxed is None:
                return PodError(rejections, state.constraints.relaxed)
            state.use(relaxed, self.topology)

    def _add(self, state: PodState) -> tuple[Rejection, ...] | None:
        hosts, domains = state.limits()
        specs = self.existing_index.specs(hosts, domains) if self.existing else []
        for node in self.existing_index.candidates(iter(self.existing), specs, lambda n: n.order):
            requirements = node.can_add(state)
            if not isinstance(requirements, str):
                node.add(state, requirements)
                self._place(state, Placement("nodeclaim" if node.nodeclaim else "node", node.name))
                return None
        claim = self._join(state, self.claims.specs(hosts, domains))
        if claim is not None:
            self._place(state, Placement("new", claim.hostname))
            return None
        return self._add_new(state)

    def _place(self, state: PodState, where: Placement) -> None:
        self.sequence.append((state.pod, where))

    def _join(self, state: PodState, specs: list[Any]) -> NewClaim | None:
        """Add the pod to a new NodeClaim of this pass: preferably one whose cheapest instance type has room
        for it already (it then costs nothing), else the first that takes it, fewest pods first."""
        requests = state.pod.requests
        memory_heavy = requests.get("memory", 0) > requests.get("cpu", 0) * self.s.bytes_per_millicore
        for claim in self.claims.best_fits(requests, specs, "memory" if memory_heavy else "cpu"):
            attempt = claim.can_add(state)
            if not isinstance(attempt, str) and claim.keeps_cheapest(attempt):
                return self._commit(state, claim, attempt)
        for claim in self.claims.in_order(specs):
            attempt = claim.can_add(state)
            if not isinstance(attempt, str):
                return self._commit(state, claim, attempt)
        return None

    def _commit(self, state: PodState, claim: NewClaim, attempt: Any) -> NewClaim:
        claim.add(state, attempt)
        self.claims.bump(claim)
        return claim

    def _add_new(self, state: PodState) -> tuple[Rejection, ...] | None:
        if not self.s.templates:
            return (Rejection(None, "no NodePool can launch any instance type"), *self.s._unusable)
        if self.max_new is not None and len(self.claims) >= self.max_new:
            return (
                Rejection(None, f"fits no existing capacity and at most {self.max_new} new NodeClaim(s) may be added"),
            )
        rejections = []
        for template in self.s.templates:
            mask = template.mask
            remaining = self.remaining.get(template.name)
            if remaining is not None:
                if remaining.get(NODES, 1) <= 0:
                    rejections.append(Rejection(template.name, "node limit reached"))
                    continue
                mask &= template.index.within_capacity({k: v for k, v in remaining.items() if k != NODES})
                if not mask:
                    rejections.append(Rejection(template.name, f"limits reached ({_limit_text(remaining)} left)"))
                    continue
            claim = NewClaim(template, mask, len(self.claims) + 1, self.topology)
            attempt = claim.can_add(state, explain=True)
            if isinstance(attempt, str):
                rejections.append(Rejection(template.name, attempt))
                continue
            self.topology.register_host(claim.hostname)
            claim.add(state, attempt)
            self.claims.push(claim)
            if remaining is not None:
                largest = template.index.largest_capacity(claim.mask, [k for k in remaining if k != NODES])
                for name in remaining:
                    remaining[name] -= 1 if name == NODES else largest.get(name, 0)
            self._place(state, Placement("new", claim.hostname))
            return None
        return (*rejections, *self.s._unusable)


@contextmanager
def _collector_paused() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _queue_order(state: PodState) -> tuple[bool, int, int, str, str]:
    """Real pods before CapacityBuffers' virtual pods (a real pod takes the room first: ours), then largest CPU
    request first, then memory, then oldest, then by UID (Karpenter's queue order)."""
    pod = state.pod
    return (pod.virtual, -pod.requests.get("cpu", 0), -pod.requests.get("memory", 0), pod.created, pod.ref.uid)


def _limit_text(remaining: Mapping[str, int]) -> str:
    left = format_resources({name: max(amount, 0) for name, amount in remaining.items()})
    return ", ".join(f"{name} {amount}" for name, amount in sorted(left.items()))


def _ref(raw: Mapping[str, Any]) -> PodRef:
    metadata = raw.get("metadata") if isinstance(raw, Mapping) else None
    metadata = metadata if isinstance(metadata, Mapping) else {}
    namespace, name = str(metadata.get("namespace") or "default"), str(metadata.get("name") or "")
    return PodRef(namespace, name, str(metadata.get("uid") or f"{namespace}/{name}"))
