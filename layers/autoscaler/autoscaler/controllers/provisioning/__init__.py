"""Provisioning: pending pods scheduled onto new NodeClaims (see ``controller``)."""

from autoscaler.controllers.provisioning.controller import (
    ProvisioningCloud,
    ProvisioningController,
    ProvisioningResult,
    opts_out,
)
from autoscaler.controllers.provisioning.plan import Plan, PlannedNodeClaim
from autoscaler.controllers.provisioning.state import ClusterState

__all__ = [
    "ClusterState",
    "Plan",
    "PlannedNodeClaim",
    "ProvisioningCloud",
    "ProvisioningController",
    "ProvisioningResult",
    "opts_out",
]
