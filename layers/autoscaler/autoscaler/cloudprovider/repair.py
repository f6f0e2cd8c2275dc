"""The cloud provider's node repair policies (Karpenter's ``cloudprovider.RepairPolicy``). Pure.

A policy names a Node condition, the status that makes the node unhealthy, and how long the node may stay so
before it is repaired (replaced). Node repair runs only with the ``NodeRepair`` feature gate on.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta


@dataclass(frozen=True)
class RepairPolicy:
    condition_type: str  # a Node condition: Ready, or a node monitoring agent's (e.g. KernelReady)
    condition_status: str  # "False" or "Unknown": the status that makes the node unhealthy
    toleration: timedelta  # how long the condition may hold, from its lastTransitionTime, before repair
