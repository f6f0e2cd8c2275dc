"""How a repacking plan places the free pods in bins (the NodeClaims that keep pods, and new ones). Pure.

Three ways to choose each bin's type: ``CAPPED``, first fit decreasing with every bin capped at one type;
``ADAPTIVE``, the same with each bin opened capped at the type that would cover what is left cheapest;
``GREEDY``, bins opened one at a time, each of the type that packs the most of what is left per dollar.
Every bin then takes the cheapest type that holds what it got (``repack``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from autoscaler.apis.resources import Resources
from autoscaler.scheduling.daemons import requests_with
from autoscaler.scheduling.nodeclaim import NewClaim, NodeClaimTemplate
from autoscaler.scheduling.pods import PodInfo
from autoscaler.scheduling.topologygroup import TopologyGroup

_CANDIDATES = 6  # capping types tried per NodePool
CAPPED, ADAPTIVE, GREEDY = "capped", "adaptive", "greedy"  # how a plan chooses the type of each bin it opens
_EPSILON = 1e-9


@dataclass
class Bin:
    claim: NewClaim | None  # the NodeClaim it keeps (it holds pods that stay), None for one to find
    stays: list[PodInfo]
    allowed: int  # instance types its requirements (and the NodePool) allow
    requests: Resources
    cap: int = -1
    shapes: dict[int, int] = field(default_factory=dict)  # shape -> pods of that shape it takes
    spread: dict[int, int] = field(default_factory=dict)  # id of a spread group -> its pods here


@dataclass(frozen=True)
class Free:
    pods: list[list[PodInfo]]  # per shape
    requests: list[Resources]  # per shape
    groups: list[TopologyGroup | None]  # per shape, the hostname spread its pods count in
    total: Resources


def candidates(template: NodeClaimTemplate, total: Mapping[str, int]) -> list[int]:
    """The types that would cover ``total`` cheapest if it could be split freely among copies of one."""
    index = template.index
    costs = []
    for price, i in index.price_order(template.requirements):
        if not template.mask >> i & 1:
            continue
        room = template.room(i, {})
        shares = [amount / room[name] if room.get(name, 0) > 0 else float("inf") for name, amount in total.items()]
        costs.append((price * max(shares, default=0.0), price, i))
    costs.sort()
    return [i for _, _, i in costs[:_CANDIDATES]]


def _fits(template: NodeClaimTemplate, cap: int, requests: Mapping[str, int], shape: Mapping[str, int]) -> int:
    """How many pods of ``shape`` type ``cap`` still holds beyond ``requests``."""
    room = template.room(cap, requests)
    count = 1 << 30
    for name, amount in shape.items():
        if amount > 0:
            count = min(count, max(room.get(name, 0), 0) // amount)
    return count


def fill(template: NodeClaimTemplate, bins: list[Bin], free: Free, cap: int, mode: str) -> bool:
    """First fit decreasing of the free pods, every bin capped at ``cap`` (a bin ``cap`` cannot hold or does
    not allow is capped at its own cheapest type). ``adaptive``: each bin opened is capped instead at the type
    that would cover the pods still to place cheapest (memory-optimized once only memory-heavy pods are left)."""
    index = template.index
    for b in bins:
        if b.allowed >> cap & 1 and min(template.room(cap, b.requests).values(), default=0) >= 0:
            b.cap = cap
        else:
            cheapest = index.cheapest(b.allowed & template.fits(b.requests, ()), b.claim.requirements, 1)  # type: ignore[union-attr]
            if not cheapest:
                return False
            b.cap = cheapest[0][0]
    room = template.room(cap, {})
    order = sorted(
        range(len(free.requests)),
        key=lambda s: -max((a / room[n] if room.get(n, 0) > 0 else 1.0) for n, a in free.requests[s].items()),
    )
    for s in order:
        shape, left, spread = free.requests[s], len(free.pods[s]), free.groups[s]
        for b in bins:
            take = min(left, _fits(template, b.cap, b.requests, shape), _spread_room(b, spread))
            if take:
                _take(b, s, shape, take, spread)
                left -= take
                if not left:
                    break
        while left:
            opened = cap
            if mode == ADAPTIVE:
                rest = order[order.index(s) + 1 :]
                residual = _demand(free, [(s, left), *((r, len(free.pods[r])) for r in rest)])
                opened = next((c for c in candidates(template, residual) if _fits(template, c, {}, shape)), cap)
            b = Bin(None, [], template.mask, {}, opened)
            take = min(left, _fits(template, opened, {}, shape), _spread_room(b, spread))
            if not take:
                return False
            _take(b, s, shape, take, spread)
            bins.append(b)
            left -= take
    return True


def fill_greedy(template: NodeClaimTemplate, bins: list[Bin], free: Free) -> bool:
    """Bins opened one at a time, each of the type that packs the most of what is left per dollar (the
    classic greedy of variable-sized bin packing, where first fit capped at one type pays for a mix of
    compute- and memory-heavy pods with whichever type suits neither). A pod's value is its share of the
    free pods' total demand, summed over resources; a bin takes the most valuable shapes first. The bins
    that keep pods stay at the cheapest type that holds those and take what still fits."""
    index = template.index
    prices = {i: price for price, i in index.price_order(template.requirements)}
    value = [sum(a / free.total[n] for n, a in shape.items() if free.total.get(n, 0) > 0) for shape in free.requests]
    order = sorted(range(len(free.requests)), key=lambda s: -value[s])
    left = [len(pods) for pods in free.pods]
    by_shape = {t for s in order for t in candidates(template, free.requests[s])[:2]}  # linear in the count
    for b in bins:
        cheapest = index.cheapest(b.allowed & template.fits(b.requests, ()), b.claim.requirements, 1)  # type: ignore[union-attr]
        if not cheapest:
            return False
        b.cap = cheapest[0][0]
        _pack(template, b, free, order=order, left=left, value=value)
    while any(left):
        residual = _demand(free, ((s, left[s]) for s in order if left[s]))
        best, best_rate = -1, 0.0
        for cap in by_shape.union(candidates(template, residual)):
            trial = Bin(None, [], template.mask, {}, cap)
            rate = _pack(template, trial, free, order=order, left=list(left), value=value) / prices[cap]
            if rate > best_rate + _EPSILON:
                best, best_rate = cap, rate
        if best < 0:
            return False
        b = Bin(None, [], template.mask, {}, best)
        _pack(template, b, free, order=order, left=left, value=value)
        bins.append(b)
    _empty_bins(template, bins, free)
    return True


def _empty_bins(template: NodeClaimTemplate, bins: list[Bin], free: Free) -> None:
    """Empty new bins, cheapest first, into the room the others have left at their caps, wherever the bin's
    price is more than what the receivers' types then cost on top of theirs (the greedy leaves slack in every
    bin, and a tight mix fits in fewer)."""
    emptied: set[int] = set()
    for j in sorted((j for j, b in enumerate(bins) if b.claim is None), key=lambda j: _price(template, bins[j])):
        receivers = _receive(template, bins, j, emptied, free)
        if receivers is None:
            continue
        more = sum(_price(template, t) - _price(template, bins[i]) for i, t in receivers.items())
        if more < _price(template, bins[j]) - _EPSILON:
            for i, trial in receivers.items():
                bins[i] = trial
            emptied.add(j)
    bins[:] = [b for j, b in enumerate(bins) if j not in emptied]


def _receive(
    template: NodeClaimTemplate, bins: list[Bin], j: int, emptied: set[int], free: Free
) -> dict[int, Bin] | None:
    """Copies of the other bins holding all of bin ``j``'s pods, first fit (None when they cannot)."""
    receivers: dict[int, Bin] = {}
    for s, count in bins[j].shapes.items():
        left = count
        for i, other in enumerate(bins):
            if i == j or i in emptied or not left:
                continue
            trial = receivers.get(i) or replace(
                other, requests=dict(other.requests), shapes=dict(other.shapes), spread=dict(other.spread)
            )
            shape, group = free.requests[s], free.groups[s]
            take = min(left, _fits(template, trial.cap, trial.requests, shape), _spread_room(trial, group))
            if take:
                _take(trial, s, shape, take, group)
                receivers[i], left = trial, left - take
        if left:
            return None
    return receivers


def _price(template: NodeClaimTemplate, b: Bin) -> float:
    """What the cheapest type that holds the bin's pods costs (infinite when none does)."""
    requirements = b.claim.requirements if b.claim is not None else template.requirements
    cheapest = template.index.cheapest(b.allowed & template.fits(b.requests, ()), requirements, 1)
    return cheapest[0][1] if cheapest else float("inf")


def _pack(
    template: NodeClaimTemplate, b: Bin, free: Free, *, order: list[int], left: list[int], value: list[float]
) -> float:
    """Fill ``b`` at its cap with what is ``left`` of each shape in ``order``; the value it took."""
    packed = 0.0
    for s in order:
        if left[s]:
            take = min(left[s], _fits(template, b.cap, b.requests, free.requests[s]), _spread_room(b, free.groups[s]))
            if take:
                _take(b, s, free.requests[s], take, free.groups[s])
                left[s] -= take
                packed += value[s] * take
    return packed


def _demand(free: Free, counts: Iterable[tuple[int, int]]) -> Resources:
    total: Resources = {}
    for s, count in counts:
        for name, amount in free.requests[s].items():
            total[name] = total.get(name, 0) + amount * count
    return total


def _spread_room(b: Bin, spread: TopologyGroup | None) -> int:
    """How many more of ``spread``'s pods the bin may hold: up to maxSkew, counting those that stay."""
    if spread is None:
        return 1 << 30
    held = b.spread.get(id(spread))
    if held is None:
        held = b.spread[id(spread)] = sum(spread.selects(p.namespace, p.labels, p.label_class) for p in b.stays)
    return max(spread.max_skew - held, 0)


def _take(b: Bin, s: int, shape: Mapping[str, int], count: int, spread: TopologyGroup | None) -> None:
    b.shapes[s] = b.shapes.get(s, 0) + count
    if spread is not None:
        b.spread[id(spread)] = b.spread.get(id(spread), 0) + count
    b.requests = requests_with(b.requests, {name: amount * count for name, amount in shape.items()})
