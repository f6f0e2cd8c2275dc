"""Proactive replacement on EC2 rebalance recommendations: the opt-in and the hand-over on the NodeClaim. Pure.

By default a rebalance recommendation is only a Kubernetes event, as in Karpenter. A NodePool opts in
with the annotation ``serverless-karpenter.io/rebalance-policy: Replace``. The interruption function then
records the recommendation on the NodeClaim (``serverless-karpenter.io/rebalance-recommended-at``) and
nothing else: launching the replacement and draining the old node once the replacement is initialized
belong to the provisioner (``replacement``), through the replacement orchestrator (docs/interruption.md).
Keeping the intent on the NodeClaim makes it survive the end of any invocation.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Final

from autoscaler.apis.v1.conditions import timestamp
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.apis.v1.nodepool import NodePool
from autoscaler.clock import parse_time

DOMAIN: Final = "serverless-karpenter.io"
# On a NodePool: what to do when EC2 recommends rebalancing one of its spot instances.
ANNOTATION_REBALANCE_POLICY: Final = f"{DOMAIN}/rebalance-policy"
# On a NodeClaim, written by the interruption function: when EC2 first recommended rebalancing it.
ANNOTATION_REBALANCE_RECOMMENDED_AT: Final = f"{DOMAIN}/rebalance-recommended-at"


class RebalancePolicy(StrEnum):
    NOTIFY = "Notify"  # an event on the Node and NodeClaim (the default, as Karpenter)
    REPLACE = "Replace"  # also launch a replacement first, then drain once it is initialized


def rebalance_policy(nodepool: NodePool | None) -> tuple[RebalancePolicy, str | None]:
    """The NodePool's policy, and a warning when its annotation holds an unknown value (then: Notify)."""
    value = ((nodepool.metadata.annotations or {}) if nodepool else {}).get(ANNOTATION_REBALANCE_POLICY)
    if value is None:
        return RebalancePolicy.NOTIFY, None
    try:
        return RebalancePolicy(value), None
    except ValueError:
        name = nodepool.name if nodepool else ""
        allowed = ", ".join(p.value for p in RebalancePolicy)
        return (
            RebalancePolicy.NOTIFY,
            f"NodePool {name}: {ANNOTATION_REBALANCE_POLICY}={value!r} is not one of {allowed}",
        )


def recommendation_annotation(recommended_at: datetime) -> dict[str, str | None]:
    """The annotation patch that records a recommendation on a NodeClaim."""
    return {ANNOTATION_REBALANCE_RECOMMENDED_AT: timestamp(recommended_at)}


def rebalance_recommended_at(nodeclaim: NodeClaim) -> datetime | None:
    """When the recommendation was recorded, or None (also for an unreadable value)."""
    value = (nodeclaim.metadata.annotations or {}).get(ANNOTATION_REBALANCE_RECOMMENDED_AT)
    return parse_time(value)
