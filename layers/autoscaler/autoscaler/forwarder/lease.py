"""Leader election decisions over a coordination.k8s.io/v1 Lease, as client-go's leaderelection makes them. Pure.

Expiry is judged on our own clock from when we last saw the lease change (not from the holder's
``renewTime``), so clock skew between replicas cannot hand the lease to two of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from autoscaler.kube.objects import Body


def micro_time(moment: float) -> str:
    """A metav1.MicroTime."""
    return datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass
class Observation:
    """What a candidate last saw of the lease, and when (on its own clock)."""

    resource_version: str = ""
    holder: str = ""
    seen_at: float = float("-inf")

    def update(self, lease: Mapping[str, Any], now: float) -> None:
        view = Body(lease)
        if view.resource_version != self.resource_version:
            self.resource_version, self.seen_at = view.resource_version, now
            self.holder = str(view.spec.get("holderIdentity") or "")


def may_take(lease: Mapping[str, Any], observed: Observation, identity: str, now: float) -> bool:
    """Whether ``identity`` may write itself into the lease: it holds it, nobody does, or the holder has not
    renewed for a whole lease duration as far as we have watched."""
    spec = Body(lease).spec
    holder = spec.get("holderIdentity") or ""
    if holder in ("", identity):
        return True
    duration = float(spec.get("leaseDurationSeconds") or 0)
    return now >= observed.seen_at + duration


def claimed_spec(lease: Mapping[str, Any] | None, identity: str, duration: int, now: float) -> dict[str, Any]:
    """The lease spec that records ``identity`` as holder: renewTime now, acquireTime and transitions moved
    only when the holder changes."""
    spec = dict(Body(lease).spec) if lease is not None else {}
    changed = spec.get("holderIdentity") != identity
    transitions = int(spec.get("leaseTransitions") or 0)
    return {
        **spec,
        "holderIdentity": identity,
        "leaseDurationSeconds": duration,
        "acquireTime": micro_time(now) if changed or not spec.get("acquireTime") else spec["acquireTime"],
        "renewTime": micro_time(now),
        "leaseTransitions": transitions + 1 if changed and lease is not None else transitions,
    }


def released_spec(lease: Mapping[str, Any], now: float) -> dict[str, Any]:
    """Giving the lease up on a clean shutdown, so the other replica takes over at once."""
    return {
        **Body(lease).spec,
        "holderIdentity": None,
        "leaseDurationSeconds": 1,
        "renewTime": micro_time(now),
    }
