"""The CloudWatch metrics the functions emit and the stack's dashboard reads: one list of names for both. Pure.

The functions publish with Powertools Metrics (embedded metric format) into NAMESPACE; Powertools adds the
dimension `service`, which the stack sets to the function's name (POWERTOOLS_SERVICE_NAME).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

NAMESPACE = "ServerlessKarpenter"
SERVICE_DIMENSION = "service"

# Count, emitted by the provisioner: one per NodeClaim whose instance was launched.
NODECLAIMS_LAUNCHED = "NodeClaimsLaunched"
# Count, emitted by the termination function: one per NodeClaim whose instance was terminated.
NODECLAIMS_TERMINATED = "NodeClaimsTerminated"
# Milliseconds, emitted by the interruption function: from a message's arrival on the queue (SentTimestamp) to
# the first action on its instance (the cordon, when the node is drained).
INTERRUPTION_LATENCY = "InterruptionLatency"


@dataclass(frozen=True)
class MetricPoint:
    """One data point a controller reports and a handler publishes (as EMF, through Powertools). Points with
    dimensions are published one record each, so that each keeps its own; the rest share the service's."""

    name: str
    value: float
    unit: Literal["Count", "Seconds", "Milliseconds"] = "Count"
    dimensions: tuple[tuple[str, str], ...] = ()
