"""Which parts of the API a Karpenter feature gate governs, and what is ignored while the gate is off.

Karpenter admits these fields and kinds whatever its gates say and simply does not act on them while the gate is
off; so do we, and we say so: ``gated_off`` lists what an object holds that a disabled gate makes inert, for
``autoscaler validate`` and for a warning event on the object. Gates are named as Karpenter names them; which are
on is the caller's (``autoscaler.settings.FeatureGates.enabled``).
"""

from __future__ import annotations

from collections.abc import Callable

from autoscaler.apis.autoscaling import CapacityBuffer
from autoscaler.apis.rules import ApiModel
from autoscaler.apis.v1.ec2nodeclass import EC2NodeClass
from autoscaler.apis.v1.nodepool import NodePool
from autoscaler.apis.v1alpha1 import NodeOverlay
from autoscaler.apis.validation import FieldError

STATIC_CAPACITY = "StaticCapacity"
RESERVED_CAPACITY = "ReservedCapacity"
NODE_OVERLAY = "NodeOverlay"
CAPACITY_BUFFER = "CapacityBuffer"
# The reason of the warning event on an object with a field its gate leaves inert.
EVENT_REASON = "FeatureGateDisabled"


def gated_off(obj: ApiModel, enabled: Callable[[str], bool]) -> list[FieldError]:
    """What ``obj`` holds that a gate which is off makes inert (empty when every such gate is on), each at its
    field (``""``: the whole object) with the gate as the rule."""
    found: list[FieldError] = []

    def off(gate: str, path: str, consequence: str) -> None:
        if not enabled(gate):
            found.append(FieldError(path, gate, f"ignored while the {gate} feature gate is off: {consequence}"))

    if isinstance(obj, NodePool) and obj.spec.replicas is not None:
        off(STATIC_CAPACITY, "spec.replicas", "the NodePool is static and launches no nodes")
    if isinstance(obj, EC2NodeClass) and obj.spec.capacity_reservation_selector_terms is not None:
        off(RESERVED_CAPACITY, "spec.capacityReservationSelectorTerms", "no capacity reservation is used")
    if isinstance(obj, NodeOverlay):
        off(NODE_OVERLAY, "", "the overlay changes no instance type")
    if isinstance(obj, CapacityBuffer):
        off(CAPACITY_BUFFER, "", "no buffer capacity is provisioned")
    return found
