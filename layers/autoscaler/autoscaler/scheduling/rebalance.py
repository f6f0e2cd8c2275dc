"""Rebalancing new NodeClaims by exchanging interchangeable pods, after packing.

Packing pods largest first leaves some NodeClaims short of memory with CPU to spare and others the
other way round, and each pays for the instance type its scarcer resource needs. Two pods with the
same namespace, labels and constraints are interchangeable for every rule the scheduler enforces:
the same selectors count them, the same topology groups and requirements bind them. Exchanging two
such pods between NodeClaims, together with their turns in the placement order, therefore changes
nothing but the resources each NodeClaim holds, so every constraint that held still holds. The pass
exchanges such pairs whenever that makes the two NodeClaims cheaper together, and repeats while that
pays off.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from autoscaler.apis.resources import Resources
from autoscaler.scheduling.nodeclaim import NewClaim
from autoscaler.scheduling.pods import PodInfo, PodRef

CPU, MEMORY = "cpu", "memory"
_ROUNDS = 4


@dataclass
class _Claim:
    claim: NewClaim
    allowed: int  # instance types the requirements (and the NodePool's limits) allow, whatever the requests
    price: float
    lean: float  # > 0: CPU to spare (memory-bound); < 0: memory to spare


def _price(claim: NewClaim, allowed: int, requests: Mapping[str, int]) -> tuple[int, float] | None:
    template = claim.template
    mask = allowed & template.fits(requests, tuple(claim.host_ports))
    cheapest = template.index.cheapest(mask, claim.requirements, 1)
    return cheapest[0] if cheapest else None


def _lean(claim: NewClaim, type_index: int) -> float:
    """Spare CPU minus spare memory, each as a share of the instance type's allocatable."""
    room = claim.template.room(type_index, claim.requests)
    allocatable = claim.template.index.allocatable[type_index]
    return room.get(CPU, 0) / max(allocatable.get(CPU, 1), 1) - room.get(MEMORY, 0) / max(allocatable.get(MEMORY, 1), 1)


def _shape(pod: PodInfo, scale: Mapping[str, int]) -> float:
    """How memory-heavy a pod is relative to the instance type shape (positive: memory-heavy)."""
    return pod.requests.get(MEMORY, 0) / max(scale.get(MEMORY, 1), 1) - pod.requests.get(CPU, 0) / max(
        scale.get(CPU, 1), 1
    )


def _swapped(requests: Resources, out: PodInfo, into: PodInfo) -> Resources:
    result = dict(requests)
    for name, amount in out.requests.items():
        result[name] = result.get(name, 0) - amount
    for name, amount in into.requests.items():
        result[name] = result.get(name, 0) + amount
    return result


def rebalance(claims: list[NewClaim], order: list[PodInfo]) -> None:
    """Exchange interchangeable pods between ``claims`` while that lowers their total price. ``order`` is
    the placement order; exchanged pods also exchange their places in it."""
    states = {}
    for claim in claims:
        if claim.template.has_min_values or claim.cheapest < 0:
            continue
        index = claim.template.index
        allowed = claim.limit_mask & index.compatible(claim.requirements)
        if claim.template.limited:  # never offer a larger instance type than the NodePool's limits allowed for
            allowed &= index.within_capacity(index.largest_capacity(claim.mask, claim.template.limited))
        states[claim.sequence] = _Claim(claim, allowed, claim.price, _lean(claim, claim.cheapest))
    classes: dict[tuple[object, ...], dict[int, list[PodInfo]]] = {}
    for state in states.values():
        for pod in state.claim.pods:
            if pod.host_ports or pod.claims:
                continue  # pods with ports or volumes differ in more than resources
            key = (pod.constraints, pod.label_class)
            classes.setdefault(key, {}).setdefault(state.claim.sequence, []).append(pod)
    position = {pod.ref: i for i, pod in enumerate(order)}
    for _ in range(_ROUNDS):
        if not sum([_exchange(states, members, order, position) for members in classes.values()]):
            break


def _exchange(
    states: dict[int, _Claim], members: dict[int, list[PodInfo]], order: list[PodInfo], position: dict[PodRef, int]
) -> int:
    """One sweep over a class: pair memory-bound with CPU-bound NodeClaims, most lopsided first."""
    if len(members) < 2:
        return 0
    memory_bound = sorted((s for s in members if states[s].lean > 0), key=lambda s: -states[s].lean)
    cpu_bound = sorted((s for s in members if states[s].lean < 0), key=lambda s: states[s].lean)
    exchanged = 0
    for a, b in zip(memory_bound, cpu_bound, strict=False):
        first, second = states[a], states[b]
        scale = first.claim.template.index.allocatable[first.claim.cheapest]
        p = max(members[a], key=lambda pod: _shape(pod, scale))  # memory-heavy, leaves the memory-bound claim
        q = min(members[b], key=lambda pod: _shape(pod, scale))  # CPU-heavy, leaves the CPU-bound claim
        if _shape(p, scale) <= _shape(q, scale):
            continue
        requests_a = _swapped(first.claim.requests, p, q)
        requests_b = _swapped(second.claim.requests, q, p)
        new_a = _price(first.claim, first.allowed, requests_a)
        new_b = _price(second.claim, second.allowed, requests_b)
        if new_a is None or new_b is None or new_a[1] + new_b[1] >= first.price + second.price - 1e-9:
            continue
        _apply(first, requests_a, p, q)
        _apply(second, requests_b, q, p)
        members[a][members[a].index(p)] = q
        members[b][members[b].index(q)] = p
        i, j = position[p.ref], position[q.ref]
        order[i], order[j] = q, p
        position[p.ref], position[q.ref] = j, i
        exchanged += 1
    return exchanged


def _apply(state: _Claim, requests: Resources, out: PodInfo, into: PodInfo) -> None:
    claim = state.claim
    claim.pods[claim.pods.index(out)] = into
    claim.reshape(requests, state.allowed & claim.template.fits(requests, tuple(claim.host_ports)))
    state.price = claim.price
    state.lean = _lean(claim, claim.cheapest)
