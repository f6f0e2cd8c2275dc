"""The NodeClaim lifecycle: launch, registration, initialization and liveness (see ``controller``)."""

from autoscaler.apis.v1.nodeclaim import INITIALIZED, LAUNCHED, REGISTERED
from autoscaler.controllers.lifecycle.cloud import LifecycleCloud
from autoscaler.controllers.lifecycle.controller import LifecycleController, LifecycleResult, needs_step
from autoscaler.controllers.lifecycle.launch import INSUFFICIENT_CAPACITY, NODECLASS_NOT_READY
from autoscaler.controllers.lifecycle.liveness import LIVENESS, REGISTRATION_TTL

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
