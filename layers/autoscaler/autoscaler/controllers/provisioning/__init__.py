"""Provisioning: pending pods scheduled onto new NodeClaims (see ``controller``)."""

from autoscaler.controllers.provisioning.controller import (
    ProvisioningCloud,
    ProvisioningController,
    ProvisioningResult,
    usable_nodepools,
)
from autoscaler.controllers.provisioning.plan import Plan, PlannedNodeClaim

__all__ = [
    "Plan",
    "PlannedNodeClaim",
    "ProvisioningCloud",
    "ProvisioningController",
    "ProvisioningResult",
    "usable_nodepools",
]
