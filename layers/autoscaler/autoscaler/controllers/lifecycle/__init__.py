"""The NodeClaim lifecycle: launch, registration, initialization and liveness (see ``controller``)."""

from autoscaler.controllers.lifecycle.cloud import LifecycleCloud
from autoscaler.controllers.lifecycle.controller import LifecycleController, LifecycleResult, needs_step
from autoscaler.controllers.lifecycle.launch import INSUFFICIENT_CAPACITY, NODECLASS_NOT_READY
from autoscaler.controllers.lifecycle.liveness import LIVENESS, REGISTRATION_TTL
from autoscaler.controllers.lifecycle.work import LAUNCHED, REGISTERED
from autoscaler.controllers.state.nodeclaims import INITIALIZED

__all__ = [
    "INITIALIZED",
    "INSUFFICIENT_CAPACITY",
    "LAUNCHED",
    "LIVENESS",
    "NODECLASS_NOT_READY",
    "REGISTERED",
    "REGISTRATION_TTL",
    "LifecycleCloud",
    "LifecycleController",
    "LifecycleResult",
    "needs_step",
]
