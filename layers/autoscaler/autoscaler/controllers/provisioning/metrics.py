"""Provisioning metrics, with Karpenter's names."""

from __future__ import annotations

from typing import Final

# Dimensions: reason (provisioned), nodepool, capacity_type. One per NodeClaim created.
NODECLAIMS_CREATED: Final = "karpenter_nodeclaims_created_total"
# Seconds one scheduling simulation took (Karpenter's scheduler histogram); dimension controller.
SCHEDULING_DURATION: Final = "karpenter_scheduler_scheduling_duration_seconds"
# Pods the pass tried to place (Karpenter's queue depth gauge, sampled once per pass).
QUEUE_DEPTH: Final = "karpenter_scheduler_queue_depth"
# Ours: pods no NodePool can run this pass (each also gets a FailedScheduling event).
UNSCHEDULABLE_PODS: Final = "karpenter_scheduler_unschedulable_pods_count"
# Seconds from a pod's creation to its Ready condition, for pods on Karpenter's nodes that became Ready
# since the previous pass (Karpenter's summary); no dimension.
POD_STARTUP_DURATION: Final = "karpenter_pods_startup_duration_seconds"
