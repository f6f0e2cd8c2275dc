"""The CloudWatch metrics the functions emit and the stack's dashboard reads: one list of names for both. Pure.

The functions publish with Powertools Metrics (embedded metric format) into NAMESPACE; Powertools adds the
dimension `service`, which the stack sets to the function's name (POWERTOOLS_SERVICE_NAME).
"""

from __future__ import annotations

NAMESPACE = "ServerlessKarpenter"
SERVICE_DIMENSION = "service"

# Count, emitted by the provisioner: one per NodeClaim whose instance was launched.
NODECLAIMS_LAUNCHED = "NodeClaimsLaunched"
# Count, emitted by the termination function: one per NodeClaim whose instance was terminated.
NODECLAIMS_TERMINATED = "NodeClaimsTerminated"
# Milliseconds, emitted by the interruption function: from a message's arrival on the queue (SentTimestamp) to
# the first action on its instance (the cordon, when the node is drained).
INTERRUPTION_LATENCY = "InterruptionLatency"
