"""NodePool status and drift hash (Karpenter's nodepool readiness, validation, counter and hash controllers).

- ``karpenter.sh/nodepool-hash`` and ``-hash-version`` on every NodePool; when the version changes, the
  pool's NodeClaims stamped under another version are re-stamped rather than drifted (the hash itself only
  when the NodeClaim is not already Drifted), as Karpenter treats its version bumps.
- ``ValidationSucceeded``: the runtime checks the API server cannot make — Karpenter's runtime validation
  (``autoscaler.apis.v1.runtime_validation``: label and taint keys, requirement values, restricted labels) and
  the v1beta1 kubelet compatibility annotation, which must hold valid kubelet settings. A NodePool that fails a
  schema rule is not readable as a model at all; the Cluster adapter skips it with a logged warning.
- ``NodeClassReady``: the EC2NodeClass exists, is not being deleted, and is Ready (its reason when not).
- ``Ready``: both of the above. Only Ready NodePools provision.
- ``status.resources``: the capacity of the pool's nodes and in-flight NodeClaims (not being deleted), and
  ``nodes``, their count (also ``status.nodes``, the scale subresource's replicas); a node's own capacity once
  it has joined, the NodeClaim's before.
- A warning event (``FeatureGateDisabled``) on each NodePool and EC2NodeClass holding a field whose Karpenter
  feature gate is off: the field is accepted and ignored.

Writes happen only when something changed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from autoscaler.apis.conversion.annotations import CompatibilityAnnotationError
from autoscaler.apis.conversion.effective import effective_kubelet
from autoscaler.apis.feature_gates import EVENT_REASON, gated_off
from autoscaler.apis.resources import add, format_resources, parse_resources
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.common import Condition
from autoscaler.apis.v1.conditions import READY, get_condition, roll_up_ready, set_condition
from autoscaler.apis.v1.ec2nodeclass import EC2NodeClass
from autoscaler.apis.v1.hashing import NODEPOOL_HASH_VERSION, nodepool_hash
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.apis.v1.nodepool import NodePool, NodePoolStatus
from autoscaler.apis.v1.runtime_validation import joined
from autoscaler.apis.validation import runtime_errors
from autoscaler.clock import utc_now
from autoscaler.kube.objects import Node
from autoscaler.kube.port import Cluster, ClusterError, Event, KubeObject, ObjectRef
from autoscaler.settings import FeatureGates

log = logging.getLogger(__name__)

VALIDATION_SUCCEEDED = "ValidationSucceeded"
NODECLASS_READY = "NodeClassReady"
DEPENDENTS = (VALIDATION_SUCCEEDED, NODECLASS_READY)
NODES = "nodes"
DRIFTED = "Drifted"
COUNTED = ("cpu", "memory", "pods", "ephemeral-storage")  # always reported, zero when nothing runs


def nodeclass_of(nodepool: NodePool, nodeclasses: Mapping[str, EC2NodeClass]) -> EC2NodeClass | None:
    ref = nodepool.spec.template.spec.node_class_ref
    if ref.group != wk.AWS_GROUP or ref.kind != "EC2NodeClass":
        return None
    return nodeclasses.get(ref.name)


def nodeclass_readiness(nodepool: NodePool, nodeclasses: Mapping[str, EC2NodeClass]) -> tuple[bool, str, str]:
    """(ready, reason, message) of the NodePool's NodeClassReady condition."""
    nodeclass = nodeclass_of(nodepool, nodeclasses)
    if nodeclass is None:
        return False, "NodeClassNotFound", "NodeClass not found on cluster"
    if nodeclass.metadata.deletion_timestamp:
        return False, "NodeClassTerminating", "NodeClass is Terminating"
    ready = get_condition(nodeclass.status.conditions if nodeclass.status else None, READY)
    if ready is None or ready.status == "Unknown":
        return False, "NodeClassReadinessUnknown", "Node Class Readiness Unknown"
    if ready.status == "False":
        return False, ready.reason or "NodeClassNotReady", ready.message or ""
    return True, NODECLASS_READY, ""


def validation_error(nodepool: NodePool, nodeclasses: Mapping[str, EC2NodeClass]) -> str | None:
    """The message of a failed ValidationSucceeded (every problem, ``; ``-joined as Karpenter joins them)."""
    problems = [error.message for error in runtime_errors(nodepool)]
    nodeclass = nodeclass_of(nodepool, nodeclasses)
    if nodeclass is not None:  # a missing class is NodeClassReady's to report
        try:
            effective_kubelet(nodepool, nodeclass)
        except CompatibilityAnnotationError as error:
            problems.append(str(error))
    return joined(problems) or None


def conditions_for(nodepool: NodePool, nodeclasses: Mapping[str, EC2NodeClass], now: datetime) -> list[Condition]:
    conditions = list(nodepool.status.conditions or []) if nodepool.status else []
    generation = nodepool.metadata.generation
    problem = validation_error(nodepool, nodeclasses)
    if problem is None:
        conditions = set_condition(
            conditions, VALIDATION_SUCCEEDED, "True", VALIDATION_SUCCEEDED, "", now=now, observed_generation=generation
        )
    else:
        conditions = set_condition(
            conditions,
            VALIDATION_SUCCEEDED,
            "False",
            "NodePoolValidationFailed",
            problem,
            now=now,
            observed_generation=generation,
        )
    ready, reason, message = nodeclass_readiness(nodepool, nodeclasses)
    conditions = set_condition(
        conditions,
        NODECLASS_READY,
        "True" if ready else "False",
        reason,
        message,
        now=now,
        observed_generation=generation,
    )
    return roll_up_ready(conditions, DEPENDENTS, now=now, observed_generation=generation)


def is_ready(nodepool: NodePool, nodeclasses: Mapping[str, EC2NodeClass], now: datetime) -> bool:
    """Whether the NodePool provisions now (computed, not read: a pass never waits for its own status)."""
    return not_ready_reason(nodepool, nodeclasses, now) is None and not nodepool.metadata.deletion_timestamp


def not_ready_reason(nodepool: NodePool, nodeclasses: Mapping[str, EC2NodeClass], now: datetime) -> str | None:
    """Why the NodePool is not Ready (the reason and message of the first condition Ready waits on), or None."""
    conditions = conditions_for(nodepool, nodeclasses, now)
    for dependent in DEPENDENTS:
        condition = get_condition(conditions, dependent)
        if condition is not None and condition.status != "True":
            return f"{condition.reason}: {condition.message}" if condition.message else str(condition.reason)
    return None


def resources_in_use(name: str, nodeclaims: Iterable[NodeClaim], nodes: Sequence[KubeObject]) -> dict[str, str]:
    """Capacity and count of the NodePool's nodes and in-flight NodeClaims (those being deleted excluded)."""
    views = [Node(n) for n in nodes]
    node_by_provider = {n.provider_id: n for n in views if n.provider_id}
    totals: dict[str, int] = dict.fromkeys(COUNTED, 0)
    count = 0
    seen_nodes: set[str] = set()
    for claim in nodeclaims:
        if (claim.metadata.labels or {}).get(wk.LABEL_NODEPOOL) != name:
            continue
        provider_id = claim.status.provider_id if claim.status else None
        node = node_by_provider.get(provider_id or "")
        if node is not None:
            seen_nodes.add(node.name)
        if claim.metadata.deletion_timestamp or (node is not None and node.deleting):
            continue
        capacity = node.capacity if node is not None else None
        totals = add(totals, parse_resources(capacity or (claim.status.capacity if claim.status else None)))
        count += 1
    for node in views:  # nodes of the pool without a NodeClaim still count, as Karpenter's state does
        if node.name in seen_nodes or node.deleting:
            continue
        if node.labels.get(wk.LABEL_NODEPOOL) == name:
            totals = add(totals, parse_resources(node.capacity))
            count += 1
    return {**format_resources(totals), NODES: str(count)}


@dataclass
class NodePoolResult:
    ready: list[str] = field(default_factory=list)
    not_ready: dict[str, str] = field(default_factory=dict)  # NodePool -> the Ready condition's message
    written: int = 0
    failed: dict[str, str] = field(default_factory=dict)


class NodePoolController:
    def __init__(
        self,
        cluster: Cluster,
        clock: Callable[[], datetime] = utc_now,
        feature_gates: FeatureGates | None = None,
    ) -> None:
        self._cluster, self._clock = cluster, clock
        self._gates = feature_gates or FeatureGates()

    def stamp_hashes(self, nodepools: Sequence[NodePool], nodeclaims: Sequence[NodeClaim]) -> list[NodePool]:
        """The NodePool hash annotations, and the re-stamping of NodeClaims after a hash version change.
        Returns the NodePools, re-read where stamped (so that a status write later in the pass carries
        their new resourceVersion)."""
        current = []
        for nodepool in nodepools:
            annotations = nodepool.metadata.annotations or {}
            wanted = {
                wk.ANNOTATION_NODEPOOL_HASH: nodepool_hash(nodepool),
                wk.ANNOTATION_NODEPOOL_HASH_VERSION: NODEPOOL_HASH_VERSION,
            }
            if all(annotations.get(k) == v for k, v in wanted.items()):
                current.append(nodepool)
                continue
            try:
                if annotations.get(wk.ANNOTATION_NODEPOOL_HASH_VERSION) != NODEPOOL_HASH_VERSION:
                    self._restamp(nodepool.name, wanted, nodeclaims)
                self._cluster.patch_metadata(ObjectRef("NodePool", nodepool.name), annotations=wanted)
                current.append(self._cluster.nodepool(nodepool.name) or nodepool)
            except ClusterError as error:
                log.warning("stamping the hash of NodePool %s failed: %s", nodepool.name, error)
                current.append(nodepool)
        return current

    def _restamp(self, name: str, wanted: Mapping[str, str], nodeclaims: Sequence[NodeClaim]) -> None:
        for claim in nodeclaims:
            annotations = claim.metadata.annotations or {}
            if (claim.metadata.labels or {}).get(wk.LABEL_NODEPOOL) != name:
                continue
            if annotations.get(wk.ANNOTATION_NODEPOOL_HASH_VERSION) == NODEPOOL_HASH_VERSION:
                continue
            drifted = get_condition(claim.status.conditions if claim.status else None, DRIFTED) is not None
            stamp = {wk.ANNOTATION_NODEPOOL_HASH_VERSION: NODEPOOL_HASH_VERSION}
            if not drifted:
                stamp[wk.ANNOTATION_NODEPOOL_HASH] = wanted[wk.ANNOTATION_NODEPOOL_HASH]
            self._cluster.patch_metadata(claim.ref, annotations=stamp)

    def reconcile(
        self,
        nodepools: Sequence[NodePool],
        nodeclasses: Sequence[EC2NodeClass],
        nodeclaims: Sequence[NodeClaim],
        nodes: Sequence[KubeObject],
    ) -> NodePoolResult:
        """Write each NodePool's conditions and resources where they changed."""
        now, result = self._clock(), NodePoolResult()
        classes = {c.name: c for c in nodeclasses}
        self._warn_of_gated_fields([*nodepools, *nodeclasses])
        for nodepool in nodepools:
            if nodepool.metadata.deletion_timestamp:
                continue
            status = nodepool.status or NodePoolStatus()
            conditions = conditions_for(nodepool, classes, now)
            ready = get_condition(conditions, READY)
            if ready is not None and ready.status == "True":
                result.ready.append(nodepool.name)
            else:
                result.not_ready[nodepool.name] = ready.message or "" if ready else ""
            resources = resources_in_use(nodepool.name, nodeclaims, nodes)
            wanted = status.model_copy(
                update={"conditions": conditions, "resources": resources, "nodes": int(resources[NODES])}
            )
            if wanted == nodepool.status:
                continue
            try:
                self._cluster.write_status(nodepool.model_copy(update={"status": wanted}))
                result.written += 1
            except ClusterError as error:  # a conflict included: the next pass writes from fresh state
                result.failed[nodepool.name] = str(error)
        return result

    def _warn_of_gated_fields(self, objects: Sequence[NodePool | EC2NodeClass]) -> None:
        """One warning event per object and field a disabled feature gate makes inert (the adapter dedupes
        repeats across passes)."""
        for obj in objects:
            for ignored in gated_off(obj, self._gates.enabled):
                ref = ObjectRef(obj.kind, obj.name, uid=obj.metadata.uid)
                self._cluster.record_event(Event(ref, EVENT_REASON, str(ignored), "Warning"))
