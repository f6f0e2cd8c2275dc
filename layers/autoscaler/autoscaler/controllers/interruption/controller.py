"""The interruption controller: one SQS batch in, every decision carried out through the ports, a report out.

Per batch: parse every message; dead-letter the malformed ones; look the rest up in the cluster index
(built at most once per batch); plan one action per instance; carry the plans out in parallel (each is
independent and I/O bound); report per message whether it is done, a no-op, malformed, or to be retried.
A failure while acting on one instance fails only the messages about that instance.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol

from autoscaler.apis.v1.nodepool import NodePool
from autoscaler.clock import utc_now
from autoscaler.cloudprovider.errors import CloudProviderError
from autoscaler.cloudprovider.port import UnavailableOfferings
from autoscaler.controllers.interruption.decisions import plan_batch
from autoscaler.controllers.interruption.execution import PlanExecutor
from autoscaler.controllers.interruption.index import ClusterIndex, IndexPolicy
from autoscaler.controllers.interruption.messages import (
    Ignored,
    InterruptionMessage,
    Malformed,
    MessageKind,
    parse_body,
)
from autoscaler.controllers.interruption.report import (
    MALFORMED_KIND,
    BatchReport,
    InstanceResult,
    MessageOutcome,
    Status,
)
from autoscaler.controllers.rebalance.recommendation import RebalancePolicy, rebalance_policy
from autoscaler.kube.port import Cluster, ClusterError

log = logging.getLogger(__name__)
NODEPOOLS_MAX_AGE = timedelta(minutes=1)  # how soon a change of a NodePool's rebalance policy takes effect


@dataclass(frozen=True)
class QueuedMessage:
    """An SQS message as the handler received it."""

    message_id: str
    body: str
    sent_at: datetime | None = None  # SentTimestamp: when it reached the queue
    receive_count: int = 1  # ApproximateReceiveCount
    source: str = ""  # the queue's ARN


class DeadLetters(Protocol):
    def send(self, body: str, attributes: Mapping[str, str]) -> None:
        """Put ``body``, unchanged, on the dead-letter queue with ``attributes`` as string message attributes.
        Raises CloudProviderError (TransientCloudError) when the queue did not take it."""
        ...


class InterruptionController:
    """Thread-safe for the calls it makes; one instance serves every batch of a warm Lambda container."""

    def __init__(
        self,
        cluster: Cluster,
        unavailable: UnavailableOfferings,
        dead_letters: DeadLetters | None = None,
        *,
        clock: Callable[[], datetime] = utc_now,
        index_policy: IndexPolicy | None = None,
        max_workers: int = 16,
        max_receives: int = 0,
    ) -> None:
        self._cluster = cluster
        self._max_receives = max_receives  # the queue's maxReceiveCount (0: unknown)
        self._unavailable = unavailable
        self._dead_letters = dead_letters
        self._clock = clock
        self._policy = index_policy or IndexPolicy()
        self._max_workers = max_workers
        self._index: ClusterIndex | None = None
        self._nodepools: dict[str, NodePool] | None = None
        self._nodepools_read_at = datetime.min.replace(tzinfo=UTC)
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None  # kept for the warm container's later batches
        self._executor = PlanExecutor(cluster, unavailable, clock, self._worker_pool)

    def handle(self, batch: Sequence[QueuedMessage]) -> BatchReport:
        outcomes: dict[str, MessageOutcome] = {}
        valid: list[tuple[QueuedMessage, InterruptionMessage]] = []
        for queued in batch:
            parsed = parse_body(queued.body)
            if isinstance(parsed, Malformed):
                outcomes[queued.message_id] = self._dead_letter(queued, parsed.reason)
            elif isinstance(parsed, Ignored):
                outcomes[queued.message_id] = MessageOutcome(
                    queued.message_id, parsed.kind, Status.NO_OP, parsed.reason, queued.sent_at
                )
            else:
                valid.append((queued, parsed))
        results: list[InstanceResult] = []
        rebuilt, index_size = False, 0
        if valid:
            try:
                index, rebuilt = self._index_for(valid)
            except ClusterError as error:
                log.warning("could not list NodeClaims and Nodes, retrying the batch", extra={"error": str(error)})
                for queued, message in valid:
                    outcomes[queued.message_id] = _failed(queued, message.kind, f"listing the cluster: {error}")
            else:
                index_size = len(index)
                results = self._act(valid, index, outcomes)
        for queued in batch:  # the redrive would move a message failing on its last receive silently: say why
            failed = outcomes.get(queued.message_id)
            if failed is not None and failed.status is Status.FAILED and self._last_receive(queued):
                reason = f"retries exhausted: {failed.reason}"
                outcomes[queued.message_id] = self._dead_letter(queued, reason, failed.kind, Status.FAILED)
        ordered = tuple(outcomes[queued.message_id] for queued in batch if queued.message_id in outcomes)
        return BatchReport(ordered, tuple(results), rebuilt, index_size)

    def _last_receive(self, queued: QueuedMessage) -> bool:
        return self._dead_letters is not None and 0 < self._max_receives <= queued.receive_count

    # --- reading the cluster ----------------------------------------------------------------------
    def _index_for(self, valid: Sequence[tuple[QueuedMessage, InterruptionMessage]]) -> tuple[ClusterIndex, bool]:
        instance_ids = [instance_id for _, message in valid for instance_id in message.instance_ids]
        with self._lock:
            now = self._clock()
            if self._index is not None and not self._policy.needs_rebuild(self._index, instance_ids, now):
                return self._index, False
            nodeclaims = self._cluster.list_raw("NodeClaim")  # parsed by the index as messages name them
            nodes = self._cluster.nodes()
            self._index = ClusterIndex(nodeclaims, nodes, built_at=now, build_time=self._clock() - now)
            return self._index, True

    def _rebalance_policies(self) -> Callable[[str], RebalancePolicy]:
        """NodePool name -> policy, listing NodePools at most once a minute (raises ClusterError)."""
        with self._lock:
            now = self._clock()
            if self._nodepools is None or now - self._nodepools_read_at >= NODEPOOLS_MAX_AGE:
                self._nodepools = {nodepool.name: nodepool for nodepool in self._cluster.nodepools()}
                self._nodepools_read_at = now
                for nodepool in self._nodepools.values():
                    _, warning = rebalance_policy(nodepool)
                    if warning:
                        log.warning(warning)
            nodepools = self._nodepools
        return lambda name: rebalance_policy(nodepools.get(name))[0]

    # --- acting -----------------------------------------------------------------------------------
    def _act(
        self,
        valid: Sequence[tuple[QueuedMessage, InterruptionMessage]],
        index: ClusterIndex,
        outcomes: dict[str, MessageOutcome],
    ) -> list[InstanceResult]:
        def policies_failed(_: str) -> RebalancePolicy:
            raise _PoliciesUnavailable

        policy_of: Callable[[str], RebalancePolicy] = policies_failed
        needs_policies = any(
            message.kind is MessageKind.REBALANCE_RECOMMENDATION and any(index.get(i) for i in message.instance_ids)
            for _, message in valid
        )
        planned = valid
        if needs_policies:
            try:
                policy_of = self._rebalance_policies()
            except ClusterError as error:
                # Without the NodePools we cannot tell Notify from Replace: retry the rebalance messages.
                planned = [(q, m) for q, m in valid if m.kind is not MessageKind.REBALANCE_RECOMMENDATION]
                for queued, message in valid:
                    if message.kind is MessageKind.REBALANCE_RECOMMENDATION:
                        outcomes[queued.message_id] = _failed(queued, message.kind, f"listing NodePools: {error}")
        plan = plan_batch([(q.message_id, m) for q, m in planned], index, policy_of)
        results = self._executor.run(plan.plans, index)
        by_message: dict[str, list[InstanceResult]] = {}
        for result in results:
            for message_id in result.message_ids:
                by_message.setdefault(message_id, []).append(result)
        for queued, message in planned:
            related = by_message.get(queued.message_id)
            if related is None:
                reason = plan.unmatched.get(queued.message_id, "")
                outcomes[queued.message_id] = MessageOutcome(
                    queued.message_id, message.kind, Status.NO_OP, reason, queued.sent_at
                )
            else:
                outcomes[queued.message_id] = _combine(queued, message, related)
        return results

    def _worker_pool(self) -> ThreadPoolExecutor | None:
        if self._max_workers <= 1:
            return None
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=self._max_workers, thread_name_prefix="interruption")
            return self._pool

    # --- malformed messages -----------------------------------------------------------------------
    def _dead_letter(
        self, queued: QueuedMessage, reason: str, kind: str = MALFORMED_KIND, status: Status = Status.MALFORMED
    ) -> MessageOutcome:
        """Send a message to the dead-letter queue with ``reason``: a malformed one, or one still failing on its
        last receive (``kind`` and ``status`` its own)."""

        def outcome(retry: bool, counted: bool) -> MessageOutcome:
            return MessageOutcome(queued.message_id, kind, status, reason, queued.sent_at, retry=retry, counted=counted)

        context = {"message_id": queued.message_id, "reason": reason, "receive_count": queued.receive_count}
        if self._dead_letters is None:
            # No queue to send it to: fail it, and SQS's redrive policy moves it after maxReceiveCount receipts.
            first = queued.receive_count <= 1
            log.log(logging.ERROR if first else logging.INFO, "malformed interruption message", extra=context)
            return outcome(retry=True, counted=first)
        attributes = {
            "reason": reason,
            "sourceMessageId": queued.message_id,
            "sourceQueueArn": queued.source,
            "receiveCount": str(queued.receive_count),
        }
        try:
            self._dead_letters.send(queued.body, {k: v for k, v in attributes.items() if v})
        except CloudProviderError as error:
            log.warning(
                "could not dead-letter an interruption message, retrying", extra={**context, "error": str(error)}
            )
            return outcome(retry=True, counted=False)
        log.error("interruption message sent to the dead-letter queue", extra=context)
        return outcome(retry=False, counted=True)


class _PoliciesUnavailable(Exception):
    pass


def _failed(queued: QueuedMessage, kind: MessageKind, reason: str) -> MessageOutcome:
    return MessageOutcome(queued.message_id, kind, Status.FAILED, reason, queued.sent_at, retry=True)


def _combine(queued: QueuedMessage, message: InterruptionMessage, related: Sequence[InstanceResult]) -> MessageOutcome:
    """One message's outcome from the instances it named: failed if any failed, acted if any was acted on."""
    errors = [r.error for r in related if r.error]
    if errors:
        return _failed(queued, message.kind, "; ".join(errors))
    acted = [r.acted_at for r in related if r.acted_at is not None]
    if acted:
        return MessageOutcome(queued.message_id, message.kind, Status.ACTED, "", queued.sent_at, min(acted))
    notes = "; ".join(dict.fromkeys(r.note for r in related if r.note))
    return MessageOutcome(queued.message_id, message.kind, Status.NO_OP, notes, queued.sent_at)
