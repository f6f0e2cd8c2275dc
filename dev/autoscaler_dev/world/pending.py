"""How long each pod has been pending, as ``pod_pending_too_long`` judges it: wall time on the world's clock,
less the time EC2 (the world's ``fleet_capacity`` and ``fleet_partial`` faults) refused the capacity the pod's
NodeClaim asked for.

A refusal makes the offerings it names unavailable for ``UNAVAILABLE_OFFERING_TTL`` (3 minutes, as in Karpenter),
and not trying them again during that time is the autoscaler doing its job, not stalling. So a refusal excuses,
for each pod nominated to a NodeClaim not yet launched when EC2 refused, the TTL that follows it (overlapping
windows count once). The excuse is generous by design: it may cover a pod whose NodeClaim was in another
request of the same pass, or one with other offerings left to try; a pod the autoscaler neglects is still
reported, a TTL per refusal later. Without faults nothing is excused and the bound is the plain wall time.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass

from autoscaler.cloudprovider import UNAVAILABLE_OFFERING_TTL

EXCUSE_SECONDS = UNAVAILABLE_OFFERING_TTL.total_seconds()


@dataclass
class _Clock:
    since: float  # when first seen pending
    excused: float = 0.0  # seconds of refusal windows, including the part of the last one still to come
    excused_until: float = float("-inf")  # the end of the last refusal window


class PendingClocks:
    """Thread-safe: EC2's refusals arrive on the world's server threads, the checks on the runner's."""

    def __init__(self) -> None:
        self._clocks: dict[str, _Clock] = {}
        self._lock = threading.Lock()

    def refused(self, now: float, pods: Iterable[str]) -> None:
        """EC2 refused capacity at ``now`` for NodeClaims these pods (UIDs) were nominated to."""
        end = now + EXCUSE_SECONDS
        with self._lock:
            for uid in pods:
                clock = self._clocks.setdefault(uid, _Clock(since=now))  # nominated, so pending: from the last check
                clock.excused += end - max(now, clock.excused_until)
                clock.excused_until = end

    def observe(self, now: float, pending: Iterable[str]) -> dict[str, float]:
        """Record the pods pending at ``now`` (forgetting the rest) and return how long each has been pending,
        not counting the refusal windows behind it."""
        pending = set(pending)
        with self._lock:
            for uid in self._clocks.keys() - pending:
                del self._clocks[uid]
            waited = {}
            for uid in pending:
                clock = self._clocks.setdefault(uid, _Clock(since=now))
                to_come = max(0.0, clock.excused_until - now)
                waited[uid] = now - clock.since - (clock.excused - to_come)
            return waited
