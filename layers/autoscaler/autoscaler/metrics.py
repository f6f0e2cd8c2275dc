"""Every CloudWatch metric the functions emit, in one place, and the data point controllers report. Pure.

Names are Karpenter's Prometheus names where Karpenter has the metric, and the same shape where it does not:
``karpenter_<subsystem>_<what>_<unit or total>`` (``_total`` for counts, ``_seconds`` for durations, nothing
for a gauge). docs/observability.md lists each one with its unit, dimensions, emitter and Karpenter's
equivalent; a test keeps that page and this module in step.

Controllers stay pure: they return :class:`MetricPoint` values (``metric_points(result)`` in each controller
package) and the handler publishes them with ``autoscaler.powertools.Powertools.publish`` as embedded metric
format (EMF) into NAMESPACE. Powertools adds the dimension ``service`` (the function's name, set by the stack in
POWERTOOLS_SERVICE_NAME); every point is published under ``service`` alone as well as with its own dimensions,
so that the dashboard and alarms can read a function's whole series.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

NAMESPACE: Final = "ServerlessKarpenter"
SERVICE_DIMENSION: Final = "service"

Unit = Literal["Count", "Seconds", "None"]  # "None": a value with no unit of its own ($/hour)
Dimensions = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class MetricPoint:
    """One value a controller reports. A distribution (durations, latencies) is several points of the same name,
    unit and dimensions: they are published as one EMF record holding the list of values."""

    name: str
    value: float
    unit: Unit = "Count"
    dimensions: Dimensions = ()


# --- every function -----------------------------------------------------------------------------------------
# Count: events the handler could not read (wrong source, detail-type or schema); logged and dropped.
SKIPPED_EVENTS: Final = "karpenter_function_skipped_events_total"

# --- provisioning (provisioner) -----------------------------------------------------------------------------
# Count; dimensions reason (provisioned, rebalance_recommendation), nodepool, capacity_type: NodeClaims created.
NODECLAIMS_CREATED: Final = "karpenter_nodeclaims_created_total"
# Count; dimension nodepool: NodeClaims whose instance was launched.
NODECLAIMS_LAUNCHED: Final = "karpenter_nodeclaims_launched_total"
# Count; dimension nodepool: NodeClaims whose Node registered.
NODECLAIMS_REGISTERED: Final = "karpenter_nodeclaims_registered_total"
# Count: registered NodeClaims whose instance could not be tagged (refused, or throttled); the next pass retries.
INSTANCE_TAGGING_FAILURES: Final = "karpenter_nodeclaims_instance_tagging_failures_total"
# Count; dimension nodepool: NodeClaims whose Node initialized.
NODECLAIMS_INITIALIZED: Final = "karpenter_nodeclaims_initialized_total"
# Count; dimension nodepool: Nodes that joined (counted at registration).
NODES_CREATED: Final = "karpenter_nodes_created_total"
# Seconds; dimension controller (provisioner): one scheduling simulation.
SCHEDULING_DURATION: Final = "karpenter_scheduler_scheduling_duration_seconds"
# Count, a gauge: the pods a pass scheduled (pending, and those of nodes being deleted).
SCHEDULER_QUEUE_DEPTH: Final = "karpenter_scheduler_queue_depth"
# Count, a gauge: the pods no NodePool can run in a pass (each also gets a FailedScheduling event).
SCHEDULER_UNSCHEDULABLE_PODS: Final = "karpenter_scheduler_unschedulable_pods"
# Seconds: from a pod's creation to its Ready condition, pods on Karpenter's nodes, each counted by one pass.
POD_STARTUP_DURATION: Final = "karpenter_pods_startup_duration_seconds"
# Count: the triggers (cluster events, sweeps) of an invocation's batch.
PROVISIONER_TRIGGERS: Final = "karpenter_provisioner_triggers_total"
# Count: batches acknowledged without a pass, every event older than the last completed pass (the FIFO skip rule).
PROVISIONER_SKIPPED_BATCHES: Final = "karpenter_provisioner_skipped_batches_total"
# Count: queue messages that are not EventBridge events, reported as batch item failures (to the DLQ).
PROVISIONER_UNREADABLE_MESSAGES: Final = "karpenter_provisioner_unreadable_messages_total"
# Count: passes that raised. Their batches are acknowledged (the next sweep passes again), so the function's
# Errors metric stays quiet: this one is alarmed instead.
PROVISIONER_FAILED_PASSES: Final = "karpenter_provisioner_failed_passes_total"
# Count, only from a pass that saw some: reads of ARC (GetManagedResource, ENABLE_ZONAL_SHIFT) that failed since the
# previous pass, by launches or by the pass's zonal-shift events; the last good answer stood meanwhile.
ZONAL_SHIFT_READ_ERRORS: Final = "karpenter_zonal_shift_read_errors_total"

# --- termination --------------------------------------------------------------------------------------------
# Count; dimensions nodepool, reason (TerminationReason): Nodes whose termination finalizer we removed.
NODES_TERMINATED: Final = "karpenter_nodes_terminated_total"
# Seconds; dimension nodepool: from the Node's deletionTimestamp to the removal of its finalizer.
NODE_TERMINATION_DURATION: Final = "karpenter_nodes_termination_duration_seconds"
# Count; dimensions nodepool, capacity_type: NodeClaims whose termination finalizer we removed.
NODECLAIMS_TERMINATED: Final = "karpenter_nodeclaims_terminated_total"
# Seconds; dimension nodepool: from the NodeClaim's deletionTimestamp to the removal of its finalizer.
NODECLAIM_TERMINATION_DURATION: Final = "karpenter_nodeclaims_termination_duration_seconds"
# Seconds; dimension nodepool: from the InstanceTerminating condition to the instance shutting down.
INSTANCE_TERMINATION_DURATION: Final = "karpenter_nodeclaims_instance_termination_duration_seconds"
# Count; dimension code: Eviction API calls, 200 evicted, 429 blocked by a PodDisruptionBudget, 404 pod gone.
EVICTION_REQUESTS: Final = "karpenter_nodes_eviction_requests_total"
# Count: pods deleted because the terminationGracePeriod deadline came.
PODS_DELETED_AT_DEADLINE: Final = "karpenter_pods_deleted_at_termination_deadline_total"
# Count; dimension error (the exception's type): steps that failed, retried by the next sweep.
TERMINATION_ERRORS: Final = "karpenter_termination_errors_total"
# Count; dimension nodepool: NodeClaims released without terminating their instance, which this cluster does not own.
FOREIGN_INSTANCES_SKIPPED: Final = "karpenter_termination_foreign_instances_skipped_total"

# --- interruption -------------------------------------------------------------------------------------------
# Count; dimension message_type (Karpenter's message kinds, no_op, malformed): messages received.
INTERRUPTION_RECEIVED_MESSAGES: Final = "karpenter_interruption_received_messages_total"
# Count; dimensions action, message_type: actions carried out on an instance.
INTERRUPTION_ACTIONS_PERFORMED: Final = "karpenter_interruption_actions_performed_total"
# Seconds: from a message's arrival on the queue (SentTimestamp) to the first write for its instance.
INTERRUPTION_MESSAGE_QUEUE_DURATION: Final = "karpenter_interruption_message_queue_duration_seconds"
# Count, one value per invocation: the messages in the SQS batch.
INTERRUPTION_BATCH_SIZE: Final = "karpenter_interruption_batch_size"
# Count: messages that can never be handled, sent to the dead-letter queue (a redelivery is not counted again).
INTERRUPTION_MALFORMED_MESSAGES: Final = "karpenter_interruption_malformed_messages_total"
# Count: messages handed back to SQS after a transient failure.
INTERRUPTION_FAILED_MESSAGES: Final = "karpenter_interruption_failed_messages_total"

# --- garbage collection -------------------------------------------------------------------------------------
# Count; dimensions reason, nodepool, capacity_type: NodeClaims deleted by us; reasons garbage_collected (their
# instance gone), from the provisioner insufficient_capacity, nodeclass_not_ready, liveness and
# rebalance_recommendation, and from the drift sweep expired, drifted, empty and underutilized.
NODECLAIMS_DISRUPTED: Final = "karpenter_nodeclaims_disrupted_total"
GARBAGE_COLLECTED_REASON: Final = "garbage_collected"
# Count, every pass (zeros too): what it removed, one name per kind of resource.
GC_LEAKED_INSTANCES: Final = "karpenter_garbage_collection_leaked_instances_total"
GC_NODES_DELETED: Final = "karpenter_garbage_collection_nodes_deleted_total"
GC_NODECLAIMS_DELETED: Final = "karpenter_garbage_collection_nodeclaims_deleted_total"
GC_LAUNCH_TEMPLATES_DELETED: Final = "karpenter_garbage_collection_launch_templates_deleted_total"
GC_INSTANCE_PROFILES_DELETED: Final = "karpenter_garbage_collection_instance_profiles_deleted_total"
# Count, every pass (zeros too): NodeClaims and Nodes relabelled on-demand because their reservation ended.
GC_CAPACITY_TYPE_DEMOTED: Final = "karpenter_garbage_collection_capacity_type_demoted_total"
# Count; dimension resource: listings or actions that failed, retried by the next pass.
GC_ERRORS: Final = "karpenter_garbage_collection_errors_total"
# Count: passes that found another pass holding the lease and did nothing.
GC_SKIPPED: Final = "karpenter_garbage_collection_skipped_total"

# --- disruption (drift) ------------------------------------------------------------------------------------
# Count; dimensions type (the Drifted reason) and nodepool: NodeClaims newly found drifted by a pass.
NODECLAIMS_DRIFTED: Final = "karpenter_nodeclaims_drifted_total"
# Count, a gauge per pass; dimensions nodepool and reason (Drifted, Empty, Underutilized): nodes the budgets
# let the pass disrupt (Karpenter v1's name for v0.3x's disruption_budgets_allowed_disruptions).
NODEPOOLS_ALLOWED_DISRUPTIONS: Final = "karpenter_nodepools_allowed_disruptions"
# Count, a gauge per pass; dimension reason: candidates each method found before budgets.
DISRUPTION_ELIGIBLE_NODES: Final = "karpenter_voluntary_disruption_eligible_nodes"
# Count; dimensions decision (delete, replace), reason and consolidation_type: commands started.
DISRUPTION_DECISIONS: Final = "karpenter_voluntary_disruption_decisions_total"
# Seconds; dimensions method and consolidation_type: how long each method took to decide.
DISRUPTION_EVALUATION_DURATION: Final = "karpenter_voluntary_disruption_decision_evaluation_duration_seconds"
# Count; dimension outcome (succeeded, failed): commands that ended, their old NodeClaims deleted or given up.
DISRUPTION_COMMANDS_ENDED: Final = "karpenter_voluntary_disruption_commands_ended_total"
# Count; dimension consolidation_type (and reason): commands dropped before acting because their re-check
# against a fresh read, or the independent check of their placements, failed (Karpenter's name).
DISRUPTION_FAILED_VALIDATIONS: Final = "karpenter_voluntary_disruption_failed_validations_total"
# None ($/hour); dimensions reason and consolidation_type: the saving a command predicted when it started.
DISRUPTION_PREDICTED_SAVINGS: Final = "karpenter_voluntary_disruption_predicted_savings_dollars_per_hour"
# Count; dimensions reason and consolidation_type: pods on the candidates of commands started.
DISRUPTION_DISPLACED_PODS: Final = "karpenter_voluntary_disruption_displaced_pods_total"
# None ($/hour); dimension reason: the saving a completed command realized (candidates' prices less the prices of
# the replacements launched).
DISRUPTION_REALIZED_SAVINGS: Final = "karpenter_voluntary_disruption_realized_savings_dollars_per_hour"

# --- Balanced consolidation (disruption pass) ------------------------------------------------------------------
# Count; dimensions decision (approved, rejected), nodepool, policy: moves a Balanced NodePool scored (Karpenter's).
CONSOLIDATION_MOVES: Final = "karpenter_consolidation_moves_total"
# Count (a ratio; a name without a unit suffix is a Count); same dimensions: each scored move's score, its
# savings share over its disruption share (approved from 0.5).
CONSOLIDATION_SCORE: Final = "karpenter_consolidation_score"

# --- node repair (disruption pass, NodeRepair gate) -----------------------------------------------------------
# Count; dimensions condition (snake case), nodepool, capacity_type, image_id: NodeClaims repaired (Karpenter's name;
# karpenter_nodeclaims_disrupted_total counts them too, reason unhealthy).
NODECLAIMS_UNHEALTHY_DISRUPTED: Final = "karpenter_nodeclaims_unhealthy_disrupted_total"

# --- EC2NodeClass (nodeclass) -------------------------------------------------------------------------------
# Count, every pass (zeros too); dimension action (Reconciled, WaitingForNodeClaims, Finalized, Failed).
NODECLASS_RECONCILES: Final = "karpenter_ec2nodeclasses_reconciles_total"
# Count, a gauge: classes left not Ready by the pass.
NODECLASSES_NOT_READY: Final = "karpenter_ec2nodeclasses_not_ready"

# --- EC2NodeClass deprecated AMIs (nodeclass) ---------------------------------------------------------------
# Count, a gauge per pass; dimension ec2nodeclass: the deprecated images its status.amis resolved to (ours: Karpenter
# reports them only as status.amis[].deprecated).
NODECLASS_DEPRECATED_AMIS: Final = "karpenter_ec2nodeclasses_deprecated_amis"

# --- conversion webhook -------------------------------------------------------------------------------------
# Count: objects converted in successful reviews.
CONVERSION_CONVERTED_OBJECTS: Final = "karpenter_conversion_converted_objects_total"
# Count: reviews answered with a failure (an object could not be converted, or the answer was too large).
CONVERSION_FAILED_REVIEWS: Final = "karpenter_conversion_failed_reviews_total"
# Count: requests refused before conversion (not a ConversionReview, wrong method, too large).
CONVERSION_REJECTED_REQUESTS: Final = "karpenter_conversion_rejected_requests_total"

# --- CapacityBuffers (provisioner; Karpenter has only the generic status-condition metrics for them) ---------
# Count, a gauge; dimension buffer (namespace/name): the chunks the buffer asks for (its status.replicas).
CAPACITY_BUFFER_DESIRED_REPLICAS: Final = "karpenter_capacitybuffer_desired_replicas"
# Count, a gauge; dimension buffer: chunks that fit on nodes already there (headroom a real pod can use now).
CAPACITY_BUFFER_READY_REPLICAS: Final = "karpenter_capacitybuffer_ready_replicas"
# Count, a gauge; dimension buffer: chunks on NodeClaims still launching or created by the pass.
CAPACITY_BUFFER_LAUNCHING_REPLICAS: Final = "karpenter_capacitybuffer_launching_replicas"
# Count: CapacityBuffers a pass could not read (invalid, or their reference unreadable now); logged, skipped.
CAPACITY_BUFFER_SKIPPED: Final = "karpenter_capacitybuffer_skipped_total"
