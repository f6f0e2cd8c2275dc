"""One replacement orchestrator for disruption and rebalance replacement (see ``orchestrator``), its record on
the NodeClaims (``record``), the per-reason policies (``policy``) and the NodePools' disruption budgets
(``budgets``), which both the disruption methods and the orchestrator spend."""

from autoscaler.controllers.orchestration.command import Command, Outcome, Replacement, Target, in_command
from autoscaler.controllers.orchestration.orchestrator import Orchestrator
from autoscaler.controllers.orchestration.policy import DISRUPTION_POLICIES, REBALANCE_POLICY, ReasonPolicy

__all__ = [
    "DISRUPTION_POLICIES",
    "REBALANCE_POLICY",
    "Command",
    "Orchestrator",
    "Outcome",
    "ReasonPolicy",
    "Replacement",
    "Target",
    "in_command",
]
