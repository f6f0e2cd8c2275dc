"""Repacking the pods free to go anywhere among a NodePool's new NodeClaims, after packing. Pure.

Packing pods largest first fills every new NodeClaim up to the largest instance type of the pool, in the
pods' order: the first NodeClaims take the CPU-heavy pods and leave their memory idle, and the pods left
over pay a memory-optimized type. Many pods are free to go to any NodeClaim of their NodePool: no node
selector or affinity, no topology rule of their own, counted by no other pod's, no host port, no volume.
Which NodeClaim holds them changes nothing any constraint sees, only the price.

For each NodePool, this pass keeps every other pod where it is and packs the free pods again, first fit
decreasing per instance type: for each of a few types that would cover the free pods' total cheapest, every
NodeClaim (and each one opened for what is left) is capped at that type, pods go to the first with room, and
every NodeClaim then takes the cheapest type that holds what it got; for up to ``GREEDY_MAX_PODS`` free pods,
one more plan opens each NodeClaim at the type that packs the most of what is left per dollar (``repack_fill``).
The cheapest of these plans replaces the packing when it costs less. Pods of one shape move together (the same
requests), so a plan costs a few operations per shape and NodeClaim, whatever the number of pods.

A plan reuses the hostnames of the NodeClaims it empties before opening new ones, and opens none when the
pass may add no more NodeClaims or a host holds more than maxSkew of a hostname spread's pods (a node
without them would make the emptiest count zero, and that host's pods beyond maxSkew break the spread).
A plan must fit the NodePool's limits, counting each NodeClaim at the largest instance type it may still
launch as the pass does; NodePools with minValues are left as packed, as by rebalancing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from autoscaler.apis.resources import Resources
from autoscaler.apis.v1 import labels as wk
from autoscaler.scheduling.daemons import requests_with
from autoscaler.scheduling.nodeclaim import NewClaim, NodeClaimTemplate
from autoscaler.scheduling.pods import HostPort, PodInfo
from autoscaler.scheduling.repack_fill import ADAPTIVE, CAPPED, GREEDY, Bin, Free, candidates, fill, fill_greedy
from autoscaler.scheduling.topology import Topology
from autoscaler.scheduling.topologygroup import SPREAD, TopologyGroup

NODES = "nodes"  # a NodePool limit on the number of nodes
GREEDY_MAX_PODS = 2000  # the greedy plan weighs every candidate type per bin: for bursts, the capped plans only
_EPSILON = 1e-9


def movable(pod: PodInfo, topology: Topology) -> bool:
    """True when nothing but resources decides where the pod may go among its NodePool's new NodeClaims."""
    c = pod.constraints
    bound = c.node_selector or c.required_terms or c.preferred_terms or c.spreads or c.affinity
    bound = bound or c.preferred_affinity or c.anti_affinity or c.preferred_anti_affinity
    return not (bound or pod.host_ports or pod.claims or topology.selecting(pod) or topology.inverse_selecting(pod))


def spread_group(pod: PodInfo, topology: Topology) -> TopologyGroup | None:
    """The pod's hostname spread when that is all that binds it: one DoNotSchedule spread over hostnames,
    counted by no other group, and otherwise free. Such pods may go to any new NodeClaim holding fewer than
    maxSkew of them once every host holds at most maxSkew (see ``may_open_nodes``)."""
    c = pod.constraints
    if len(c.spreads) != 1 or pod.host_ports or pod.claims or topology.inverse_selecting(pod):
        return None
    spread = c.spreads[0]
    if spread.topology_key != wk.LABEL_HOSTNAME or spread.when_unsatisfiable != "DoNotSchedule":
        return None
    if spread.min_domains is not None or spread.match_label_keys:
        return None
    bound = c.node_selector or c.required_terms or c.preferred_terms or c.affinity
    bound = bound or c.preferred_affinity or c.anti_affinity or c.preferred_anti_affinity
    groups = topology.selecting(pod)
    if bound or len(groups) != 1 or groups[0].kind != SPREAD or not groups[0].hostname:
        return None
    return groups[0]


def repack(
    claims: list[NewClaim],
    topology: Topology,
    remaining: Mapping[str, Resources],
    *,
    may_open: bool,
    max_claims: int | None,
) -> tuple[list[NewClaim], dict[str, list[PodInfo]]]:
    """``claims`` after repacking, and the pods each changed NodeClaim (by hostname) now holds. ``remaining``:
    what each limited NodePool's limits leave after the pass; ``may_open``: whether new NodeClaims may be
    opened beyond those emptied; ``max_claims`` caps their number."""
    by_template: dict[int, list[NewClaim]] = {}
    for claim in claims:
        by_template.setdefault(id(claim.template), []).append(claim)
    sequence = max((c.sequence for c in claims), default=0)
    result: list[NewClaim] = []
    changed: dict[str, list[PodInfo]] = {}
    for group in by_template.values():
        template = group[0].template
        if template.has_min_values:
            result += group
            continue
        budget = None if max_claims is None else max_claims - (len(claims) - len(group))
        headroom = _headroom(group, remaining.get(template.name))
        plan = _best_plan(template, group, topology, may_open=may_open, budget=budget, headroom=headroom)
        if plan is None:
            result += group
            continue
        kept, sequence = _apply(template, group, plan, topology, sequence=sequence, changed=changed)
        result += kept
    return sorted(result, key=lambda c: c.sequence), changed


def _headroom(group: list[NewClaim], remaining: Mapping[str, int] | None) -> Resources | None:
    """What the NodePool's limits allow the group's NodeClaims in all: what is left plus what the pass
    counted for them (at least the largest capacity their instance types still have)."""
    if remaining is None:
        return None
    headroom = dict(remaining)
    for claim in group:
        index = claim.template.index
        for name, amount in index.largest_capacity(claim.mask, [n for n in remaining if n != NODES]).items():
            headroom[name] += amount
    if NODES in headroom:
        headroom[NODES] += len(group)
    return headroom


def _within(template: NodeClaimTemplate, bins: list[Bin], headroom: Resources | None) -> bool:
    if headroom is None:
        return True
    if len(bins) > headroom.get(NODES, len(bins)):
        return False
    used: Resources = {}
    index = template.index
    for b in bins:
        mask = b.allowed & template.fits(b.requests, ())
        used = requests_with(used, index.largest_capacity(mask, [n for n in headroom if n != NODES]))
    return all(amount <= headroom[name] for name, amount in used.items())


def _best_plan(
    template: NodeClaimTemplate,
    group: list[NewClaim],
    topology: Topology,
    *,
    may_open: bool,
    budget: int | None,
    headroom: Resources | None,
) -> tuple[list[Bin], Free] | None:
    index = template.index
    shapes: dict[tuple[object, ...], list[PodInfo]] = {}
    groups: dict[tuple[object, ...], TopologyGroup | None] = {}
    stays: list[list[PodInfo]] = []
    for claim in group:
        kept = []
        for pod in claim.pods:
            spread = spread_group(pod, topology) if may_open else None
            if spread is not None or movable(pod, topology):
                key = (tuple(sorted(pod.requests.items())), id(spread))
                shapes.setdefault(key, []).append(pod)
                groups[key] = spread
            else:
                kept.append(pod)
        stays.append(kept)
    if not shapes:
        return None
    requests = [dict(key[0]) for key in shapes]  # type: ignore[call-overload]
    total: Resources = {}
    for shape, pods in zip(requests, shapes.values(), strict=True):
        for name, amount in shape.items():
            total[name] = total.get(name, 0) + amount * len(pods)
    free = Free(list(shapes.values()), requests, list(groups.values()), total)
    current = sum(c.price for c in group)
    # emptied NodeClaims lend their hostnames to the bins opened, so up to len(group) bins open none
    limit = len(group) if not may_open else max(len(group), budget) if budget is not None else 1 << 30
    best, best_cost = None, current - _EPSILON
    caps = candidates(template, total)
    plans: list[tuple[int, str]] = [*((c, CAPPED) for c in caps), (caps[0], ADAPTIVE)]
    if sum(len(pods) for pods in free.pods) <= GREEDY_MAX_PODS:
        plans.append((caps[0], GREEDY))
    for cap, mode in plans:
        bins = [
            Bin(claim, kept, claim.limit_mask & index.compatible(claim.requirements), _sum(p.requests for p in kept))
            for claim, kept in zip(group, stays, strict=True)
            if kept
        ]
        filled = fill_greedy(template, bins, free) if mode == GREEDY else fill(template, bins, free, cap, mode)
        if filled and len(bins) <= limit:
            cost = _cost(template, bins)
            if cost is not None and cost < best_cost and _within(template, bins, headroom):
                best, best_cost = bins, cost
    return (best, free) if best is not None else None


def _cost(template: NodeClaimTemplate, bins: list[Bin]) -> float | None:
    total = 0.0
    for b in bins:
        requirements = b.claim.requirements if b.claim is not None else template.requirements
        ports = tuple(b.claim.host_ports) if b.claim is not None else ()
        cheapest = template.index.cheapest(b.allowed & template.fits(b.requests, ports), requirements, 1)
        if not cheapest:
            return None
        total += cheapest[0][1]
    return total


def _apply(
    template: NodeClaimTemplate,
    group: list[NewClaim],
    plan: tuple[list[Bin], Free],
    topology: Topology,
    *,
    sequence: int,
    changed: dict[str, list[PodInfo]],
) -> tuple[list[NewClaim], int]:
    bins, free = plan
    queues = [list(pods) for pods in free.pods]
    keeping = {id(b.claim) for b in bins if b.claim is not None}
    spare = [c for c in group if id(c) not in keeping]
    kept: list[NewClaim] = []
    for b in bins:
        claim = b.claim
        if claim is None:
            if spare:
                claim = spare.pop(0)
            else:
                sequence += 1
                claim = NewClaim(template, template.mask, sequence, topology)
                topology.register_host(claim.hostname)
        pods = list(b.stays)
        for s, count in b.shapes.items():
            pods += queues[s][:count]
            del queues[s][:count]
        claim.refill(pods, b.requests, b.allowed & template.fits(b.requests, tuple(_ports(pods))))
        changed[claim.hostname] = pods
        kept.append(claim)
    return kept, sequence


def _ports(pods: Sequence[PodInfo]) -> set[HostPort]:
    return {port for pod in pods for port in pod.host_ports}


def _sum(requests: Iterable[Mapping[str, int]]) -> Resources:
    total: Resources = {}
    for r in requests:
        total = requests_with(total, r)
    return total


def may_open_nodes(topology: Topology) -> bool:
    """True when a node holding none of a hostname spread's pods breaks no spread: every host holds at most
    maxSkew of each such spread's pods, so each was within its skew whatever the emptiest host's count."""
    return all(
        max(group.domains.values(), default=0) <= group.max_skew
        for group in topology.groups.values()
        if group.hostname and group.kind == SPREAD
    )
