"""Static NodePools (``spec.replicas``): their decisions (pure) and the reconciler the provisioner pass runs."""

from autoscaler.controllers.static.controller import StaticController, StaticResult
from autoscaler.controllers.static.decisions import (
    Counts,
    StaticDecision,
    is_static,
    node_counts,
    room_under_limit,
    static_nodeclaim,
)

__all__ = [
    "Counts",
    "StaticController",
    "StaticDecision",
    "StaticResult",
    "is_static",
    "node_counts",
    "room_under_limit",
    "static_nodeclaim",
]
