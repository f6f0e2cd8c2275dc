"""The order in which a pod tries nodes, and a shortcut past the nodes its topology rules out.

New NodeClaims are tried fewest pods first (Karpenter sorts them by pod count before every pod),
oldest first among equals; existing nodes in their fixed order. A pod's topology constraints often
rule out most nodes before any is asked: hostname anti-affinity allows only hosts without a matching
pod, a zonal spread only the zones within its skew. :class:`HostIndex` files hosts by the domain
their requirements fix, so the scheduler asks just the hosts that can still say yes, in order.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, Protocol, TypeVar

from autoscaler.scheduling.podstate import DomainLimits, HostLimits
from autoscaler.scheduling.requirements import Requirement

# Visit the allowed hosts directly when they are fewer than this share of all hosts.
_DIRECT_SHARE = 4
# How many claims with enough CPU room a pod looks at for one with enough room in every resource.
_BEST_FIT_SCAN = 64
CPU, MEMORY = "cpu", "memory"
_NONE: set[str] = set()


class Host(Protocol):
    @property
    def hostname(self) -> str: ...

    @property
    def requirements(self) -> Mapping[str, Requirement]: ...


H = TypeVar("H", bound=Host)
Spec = tuple[set[str], ...]  # a host is allowed when it is in one of the sets


def _pin(requirement: Requirement | None) -> str | None:
    if requirement is not None and not requirement.complement and len(requirement.values) == 1:
        return next(iter(requirement.values))
    return None


class HostIndex(Generic[H]):
    """Hosts by name and, for each topology key asked about, by the single domain they are fixed to."""

    def __init__(self) -> None:
        self.by_host: dict[str, H] = {}
        self._pinned: dict[str, dict[str, set[str]]] = {}  # key -> domain -> hosts fixed to it
        self._open: dict[str, set[str]] = {}  # key -> hosts not fixed to one domain
        self._pins: dict[str, dict[str, str | None]] = {}  # key -> host -> its domain

    def __len__(self) -> int:
        return len(self.by_host)

    def add(self, host: H) -> None:
        self.by_host[host.hostname] = host
        self.update(host)

    def update(self, host: H) -> None:
        """Refile ``host`` after its requirements changed."""
        for key, pins in self._pins.items():
            pin = _pin(host.requirements.get(key))
            name = host.hostname
            if name in pins:
                if pins[name] == pin:
                    continue
                self._file(key, name, pins[name], remove=True)
            pins[name] = pin
            self._file(key, name, pin)

    def _file(self, key: str, name: str, pin: str | None, remove: bool = False) -> None:
        target = self._open[key] if pin is None else self._pinned[key].setdefault(pin, set())
        if remove:
            target.discard(name)
        else:
            target.add(name)

    def _track(self, key: str) -> None:
        if key in self._pins:
            return
        self._pins[key], self._pinned[key], self._open[key] = {}, {}, set()
        for host in self.by_host.values():
            pin = _pin(host.requirements.get(key))
            self._pins[key][host.hostname] = pin
            self._file(key, host.hostname, pin)

    def specs(self, hosts: HostLimits, domains: DomainLimits) -> list[Spec]:
        specs = list(hosts)
        for key, allowed in domains.items():
            self._track(key)
            pinned = self._pinned[key]
            specs.append((self._open[key], *(pinned.get(d, _NONE) for d in allowed)))
        return specs

    def candidates(self, ordered: Iterator[H], specs: list[Spec], order: Callable[[H], tuple[Any, ...]]) -> Iterator[H]:
        """``ordered``, minus the hosts the specs exclude, in the same order."""
        if not specs:
            yield from ordered
            return
        narrowest = min(specs, key=lambda sets: sum(len(s) for s in sets))
        if sum(len(s) for s in narrowest) * _DIRECT_SHARE < len(self.by_host):
            by_host = self.by_host
            direct = [by_host[h] for s in narrowest for h in s if h in by_host and _allowed(h, specs)]
            direct.sort(key=order)
            yield from direct
            return
        for host in ordered:
            if _allowed(host.hostname, specs):
                yield host


def _allowed(hostname: str, specs: list[Spec]) -> bool:
    for sets in specs:
        for hosts in sets:
            if hostname in hosts:
                break
        else:
            return False
    return True


class Counted(Host, Protocol):
    @property
    def sequence(self) -> int: ...

    @property
    def pod_count(self) -> int: ...

    @property
    def slack(self) -> Mapping[str, int]: ...


C = TypeVar("C", bound=Counted)


class ClaimQueue(HostIndex[C]):
    """New NodeClaims, iterable fewest pods first, then by creation order."""

    def __init__(self) -> None:
        super().__init__()
        self._buckets: dict[int, list[int]] = {}  # pod count -> sequences, ascending
        self._counts: list[int] = []  # non-empty bucket keys, ascending
        self._by_sequence: dict[int, C] = {}
        # Per resource: (amount left on the cheapest instance type, sequence), ascending.
        self._room: dict[str, list[tuple[int, int]]] = {CPU: [], MEMORY: []}
        self._room_of: dict[str, dict[int, int]] = {CPU: {}, MEMORY: {}}

    def push(self, claim: C) -> None:
        self.add(claim)
        self._by_sequence[claim.sequence] = claim
        self._insert(claim.pod_count, claim.sequence)
        self._file_room(claim)

    def _file_room(self, claim: C) -> None:
        for name, rooms in self._room.items():
            room_of = self._room_of[name]
            previous = room_of.get(claim.sequence)
            if previous is not None:
                del rooms[bisect_left(rooms, (previous, claim.sequence))]
            room = claim.slack.get(name, 0)
            insort(rooms, (room, claim.sequence))
            room_of[claim.sequence] = room

    def best_fits(self, requests: Mapping[str, int], specs: list[Spec], by: str = CPU) -> Iterator[C]:
        """Claims whose cheapest instance type still has room for ``requests``, tightest CPU first: a pod
        placed there costs nothing extra. Looks at a bounded number of claims."""
        room = self._room[by]
        position = bisect_left(room, (requests.get(by, 0), -1))
        end = min(len(room), position + _BEST_FIT_SCAN)
        by_sequence = self._by_sequence
        while position < end:
            claim = by_sequence[room[position][1]]
            position += 1
            slack = claim.slack
            for name, amount in requests.items():
                if amount > slack.get(name, 0):
                    break
            else:
                if not specs or _allowed(claim.hostname, specs):
                    yield claim

    def bump(self, claim: C) -> None:
        """Record that ``claim`` just gained one pod (and maybe narrower requirements)."""
        count = claim.pod_count
        bucket = self._buckets[count - 1]
        del bucket[bisect_left(bucket, claim.sequence)]
        if not bucket:
            del self._buckets[count - 1]
            self._counts.remove(count - 1)
        self._insert(count, claim.sequence)
        self.update(claim)
        self._file_room(claim)

    def _insert(self, count: int, sequence: int) -> None:
        bucket = self._buckets.get(count)
        if bucket is None:
            bucket = self._buckets[count] = []
            insort(self._counts, count)
        insort(bucket, sequence)

    def ordered(self) -> Iterator[C]:
        by_sequence = self._by_sequence
        for count in self._counts:
            for sequence in self._buckets[count]:
                yield by_sequence[sequence]

    def in_order(self, specs: list[Spec]) -> Iterator[C]:
        return self.candidates(self.ordered(), specs, lambda c: (c.pod_count, c.sequence))
