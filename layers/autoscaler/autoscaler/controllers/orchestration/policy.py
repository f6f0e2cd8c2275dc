"""What differs between the reasons a command can have: the per-reason policy. Pure.

Every command runs the same protocol (``orchestrator``); a policy only says

- ``timeout``: how long after the command started its replacements may take to initialize;
- ``budget``: when the NodePool's disruption budgets for the reason are checked. ``AT_DECISION``: the command's
  producer (a disruption method) spent them when it chose the candidates, which are then marked at once (the
  ``DisruptionReason`` condition and the ``karpenter.sh/disrupted`` taint), so that they count against the
  budgets and take no new pods while they wait. ``BEFORE_DELETION``: nothing is marked while the replacements
  boot (launching capacity disrupts nothing); once they are up, the candidate waits for the budgets and for
  ``karpenter.sh/do-not-disrupt`` to allow it, and is then cordoned and deleted;
- ``give_up``: what giving up means. ``RELEASE``: the candidates are unmarked and untainted and their record
  removed, so that a later pass may decide about them afresh. ``KEEP_FAILED``: the record stays, in state
  ``Failed``, so that nothing starts the same command again; the node is left as it is;
- ``give_up_event``: the Warning event recorded on each candidate when its command is given up.

The budgets that apply are those naming the reason, or naming none; ``RebalanceRecommendation`` is a reason no
budget can name (the NodePool schema allows Drifted, Empty and Underutilized), so only budgets without reasons
hold it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum
from typing import Final

from autoscaler.controllers.orchestration.budgets import DRIFTED, EMPTY, UNDERUTILIZED

REBALANCE_RECOMMENDATION: Final = "RebalanceRecommendation"
REPLACEMENT_TIMEOUT: Final = timedelta(minutes=15)  # Karpenter waits 10; disruption passes run every 5 minutes


class BudgetCheck(StrEnum):
    AT_DECISION = "AtDecision"
    BEFORE_DELETION = "BeforeDeletion"


class GiveUp(StrEnum):
    RELEASE = "Release"
    KEEP_FAILED = "KeepFailed"


@dataclass(frozen=True)
class ReasonPolicy:
    reason: str
    timeout: timedelta
    budget: BudgetCheck
    give_up: GiveUp
    give_up_event: str

    @property
    def marks_at_start(self) -> bool:
        return self.budget is BudgetCheck.AT_DECISION


def _disruption(reason: str) -> ReasonPolicy:
    return ReasonPolicy(reason, REPLACEMENT_TIMEOUT, BudgetCheck.AT_DECISION, GiveUp.RELEASE, "DisruptionBlocked")


# Drift, emptiness and consolidation (the disruption function): Karpenter's disruption queue.
DISRUPTION_POLICIES: Final = (_disruption(DRIFTED), _disruption(EMPTY), _disruption(UNDERUTILIZED))
# Proactive replacement on a rebalance recommendation (the provisioner, opt-in per NodePool): giving up leaves the
# node to the spot interruption warning, which may never come.
REBALANCE_POLICY: Final = ReasonPolicy(
    REBALANCE_RECOMMENDATION,
    REPLACEMENT_TIMEOUT,
    BudgetCheck.BEFORE_DELETION,
    GiveUp.KEEP_FAILED,
    "RebalanceReplacementFailed",
)
POLICIES: Final[Mapping[str, ReasonPolicy]] = {p.reason: p for p in (*DISRUPTION_POLICIES, REBALANCE_POLICY)}
