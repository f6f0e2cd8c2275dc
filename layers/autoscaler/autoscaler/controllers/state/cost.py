"""Karpenter's disruption cost: how much it hurts to take a node down, to try the cheapest candidates first.

Each pod costs about 1, nudged by its pod-deletion-cost annotation and its priority; a node costs the sum over
its pods, scaled down as the node nears expiry (it is going away soon anyway).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

from autoscaler.kube.objects import Pod

POD_DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
# The annotation is an int32: 2**27 maps its range to about -16..+16 pods' worth.
DELETION_COST_SCALE = 2.0**27
# Priorities run from -2**31 to 1e9 (system classes ~2e9): 2**25 maps 1e9 to about +30 pods' worth.
PRIORITY_SCALE = 2.0**25
MIN_POD_COST, MAX_POD_COST = -10.0, 10.0
# Decimal numbers as Go's strconv.ParseFloat reads them (Karpenter parses the annotation as a float).
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def _deletion_cost(pod: Pod) -> float:
    """The pod-deletion-cost annotation, or 0 when it is absent or not a number (Karpenter logs and skips it)."""
    text = pod.annotations.get(POD_DELETION_COST)
    if not isinstance(text, str) or not _NUMBER.fullmatch(text):
        return 0.0
    value = float(text)
    return value if math.isfinite(value) else 0.0


def _priority(pod: Pod) -> int:
    priority = pod.spec.get("priority")
    return priority if isinstance(priority, int) and not isinstance(priority, bool) else 0


def eviction_cost(pod: Mapping[str, Any] | Pod) -> float:
    """What evicting this pod costs: 1 by default, within [-10, 10] (disruptionutils.EvictionCost)."""
    view = Pod.of(pod)
    cost = 1.0 + _deletion_cost(view) / DELETION_COST_SCALE + _priority(view) / PRIORITY_SCALE
    return min(max(cost, MIN_POD_COST), MAX_POD_COST)


def lifetime_remaining(created: datetime, expire_after: timedelta | None, now: datetime) -> float:
    """The fraction of the node's expireAfter still ahead of it, in [0, 1]; 1 when it never expires.

    A zero expireAfter (the node is due at once) counts as nothing left rather than dividing by zero.
    """
    if expire_after is None:
        return 1.0
    lifetime = expire_after.total_seconds()
    if lifetime <= 0:
        return 0.0
    remaining = (lifetime - (now - created).total_seconds()) / lifetime
    return min(max(remaining, 0.0), 1.0)


def rescheduling_cost(pods: Iterable[Mapping[str, Any]]) -> float:
    """The eviction costs of ``pods`` summed."""
    return sum((eviction_cost(pod) for pod in pods), 0.0)


def disruption_cost(
    pods: Iterable[Mapping[str, Any]], created: datetime, expire_after: timedelta | None, now: datetime
) -> float:
    """A candidate node's cost: its pods' eviction costs times its lifetime remaining.

    Karpenter sums over all the node's pods, not only those that would be rescheduled, so pass them all.
    """
    return rescheduling_cost(pods) * lifetime_remaining(created, expire_after, now)


__all__ = [
    "POD_DELETION_COST",
    "disruption_cost",
    "eviction_cost",
    "lifetime_remaining",
    "rescheduling_cost",
]
