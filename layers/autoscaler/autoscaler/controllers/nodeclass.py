"""The EC2NodeClass controller (Karpenter's nodeclass status, hash and termination controllers).

For each class: keep the finalizer ``karpenter.k8s.aws/termination`` on it; stamp the drift hash
annotations (and re-stamp its NodeClaims when the hash version changed); resolve subnets, security
groups, AMIs, the instance profile and capacity reservations into ``status`` with one condition each, and the
placement group (a condition only: every function resolves the group itself, as Karpenter keeps none in the
status), rolled up into Ready.
A class being deleted keeps its finalizer until none of its NodeClaims is left, then its instance
profile and launch templates are deleted and the finalizer removed. Decisions only: Kubernetes is
reached through the Cluster port and the cloud through the NodeClassResolver port.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from autoscaler.apis.conversion import UBUNTU_INCOMPATIBLE_MESSAGE, UBUNTU_INCOMPATIBLE_REASON, ubuntu_incompatible
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.common import Condition, ConditionStatus
from autoscaler.apis.v1.conditions import READY, get_condition, roll_up_ready, set_condition
from autoscaler.apis.v1.ec2nodeclass import EC2NodeClass, EC2NodeClassStatus
from autoscaler.apis.v1.ec2nodeclass_status import CapacityReservationStatus
from autoscaler.apis.v1.hashing import NODECLASS_HASH_VERSION, nodeclass_hash
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.clock import utc_now
from autoscaler.cloudprovider.errors import CloudProviderError, TransientCloudError
from autoscaler.cloudprovider.nodeclass import NodeClassResolver, NothingMatchedError, ResolutionRefusedError
from autoscaler.kube.port import Cluster, Event, ObjectRef
from autoscaler.metrics import NODECLASS_DEPRECATED_AMIS, NODECLASS_RECONCILES, NODECLASSES_NOT_READY, MetricPoint

log = logging.getLogger(__name__)

SUBNETS_READY = "SubnetsReady"
SECURITY_GROUPS_READY = "SecurityGroupsReady"
AMIS_READY = "AMIsReady"
INSTANCE_PROFILE_READY = "InstanceProfileReady"
PLACEMENT_GROUP_READY = "PlacementGroupReady"
CAPACITY_RESERVATIONS_READY = "CapacityReservationsReady"  # a dependent of Ready only while ReservedCapacity is on
AMI_DEPRECATED = "AMIDeprecated"  # the Warning event's reason
DEPENDENTS = (AMIS_READY, SUBNETS_READY, SECURITY_GROUPS_READY, INSTANCE_PROFILE_READY, PLACEMENT_GROUP_READY)

RECONCILED = "Reconciled"
WAITING = "WaitingForNodeClaims"
FINALIZED = "Finalized"
FAILED = "Failed"
TRUE: ConditionStatus = "True"
FALSE: ConditionStatus = "False"


@dataclass(frozen=True)
class Outcome:
    """What happened to one EC2NodeClass in a pass."""

    name: str
    action: str
    ready: str | None = None  # the Ready condition's status after the pass
    message: str = ""
    deprecated_amis: tuple[str, ...] = ()  # the deprecated images status.amis resolved to


@dataclass(frozen=True)
class _Check:
    condition: str
    field: str | None  # the status field it fills (None: the condition alone)
    not_found_reason: str
    resolve: Callable[[EC2NodeClass], Any]
    # (reason, message) when the class's own spec already decides the condition is False: the cloud is not asked.
    refuse: Callable[[EC2NodeClass], tuple[str, str] | None] = lambda _: None
    refused_reason: str = ""  # the reason when the cloud refuses (default: ``<condition>Refused``)


def _ubuntu_refusal(nodeclass: EC2NodeClass) -> tuple[str, str] | None:
    """A class converted from v1beta1 Ubuntu still on its placeholder AMI term: say what to pin, instead of
    the generic "no AMI matched [ami-placeholder]" the lookup would give."""
    return (UBUNTU_INCOMPATIBLE_REASON, UBUNTU_INCOMPATIBLE_MESSAGE) if ubuntu_incompatible(nodeclass) else None


def metric_points(outcomes: Sequence[Outcome]) -> list[MetricPoint]:
    """Counts per action, every action reported (zeros too) so that the series stay continuous."""
    actions = Counter(o.action for o in outcomes)
    points = [
        MetricPoint(NODECLASS_RECONCILES, actions[a], dimensions=(("action", a),))
        for a in (RECONCILED, WAITING, FINALIZED, FAILED)
    ]
    not_ready = sum(1 for o in outcomes if o.action == RECONCILED and o.ready != "True")
    points += [
        MetricPoint(NODECLASS_DEPRECATED_AMIS, len(o.deprecated_amis), dimensions=(("ec2nodeclass", o.name),))
        for o in outcomes
        if o.action == RECONCILED
    ]
    return [*points, MetricPoint(NODECLASSES_NOT_READY, not_ready)]


def expiring_claims(
    nodeclaims: Sequence[NodeClaim], reservations: Sequence[CapacityReservationStatus]
) -> list[NodeClaim]:
    """The NodeClaims, not yet being deleted, launched into a reservation whose state is ``expiring``."""
    expiring = {r.id for r in reservations if r.state == "expiring"}
    return [
        c
        for c in nodeclaims
        if not c.metadata.deletion_timestamp
        and (c.metadata.labels or {}).get(wk.LABEL_CAPACITY_RESERVATION_ID) in expiring
    ]


def belongs_to(nodeclaim: NodeClaim, nodeclass: EC2NodeClass) -> bool:
    ref = nodeclaim.spec.node_class_ref
    return ref.group == wk.AWS_GROUP and ref.kind == "EC2NodeClass" and ref.name == nodeclass.name


class NodeClassController:
    def __init__(
        self,
        cluster: Cluster,
        resolver: NodeClassResolver,
        clock: Callable[[], datetime] = utc_now,
        *,
        reserved_capacity: bool = True,  # the ReservedCapacity gate (Karpenter's default: on)
    ) -> None:
        self._cluster, self._resolver, self._clock = cluster, resolver, clock
        self._checks: tuple[_Check, ...] = (
            _Check(SUBNETS_READY, "subnets", "SubnetsNotFound", resolver.subnets),
            _Check(SECURITY_GROUPS_READY, "security_groups", "SecurityGroupsNotFound", resolver.security_groups),
            _Check(AMIS_READY, "amis", "AMINotFound", resolver.amis, _ubuntu_refusal),
            _Check(INSTANCE_PROFILE_READY, "instance_profile", "InstanceProfileNotFound", resolver.instance_profile),
            _Check(
                PLACEMENT_GROUP_READY,
                None,
                "PlacementGroupNotFound",
                resolver.placement_group,
                refused_reason="PlacementGroupResolutionFailed",
            ),
        )
        self._dependents: tuple[str, ...] = DEPENDENTS
        if reserved_capacity:
            # No reservation matching is no error: the class launches on-demand and spot (status left empty).
            check = _Check(
                CAPACITY_RESERVATIONS_READY,
                "capacity_reservations",
                "CapacityReservationsNotFound",
                lambda nodeclass: resolver.capacity_reservations(nodeclass) or None,
            )
            self._checks += (check,)
            self._dependents += (CAPACITY_RESERVATIONS_READY,)

    def reconcile_all(self) -> list[Outcome]:
        """One pass over every EC2NodeClass; a failure on one class never stops the others."""
        nodeclaims = self._cluster.nodeclaims()
        outcomes = []
        for nodeclass in self._cluster.nodeclasses():
            try:
                outcomes.append(self.reconcile(nodeclass, nodeclaims))
            except Exception as error:
                log.exception("reconciling EC2NodeClass %s failed", nodeclass.name)
                outcomes.append(Outcome(nodeclass.name, FAILED, message=f"{type(error).__name__}: {error}"))
        return outcomes

    def reconcile(self, nodeclass: EC2NodeClass, nodeclaims: Sequence[NodeClaim]) -> Outcome:
        ref = nodeclass.ref
        finalizers = nodeclass.metadata.finalizers or []
        if nodeclass.metadata.deletion_timestamp:
            return self._finalize(nodeclass, ref, [c for c in nodeclaims if belongs_to(c, nodeclass)])
        patched = wk.FINALIZER_NODECLASS_TERMINATION not in finalizers
        if patched:
            self._cluster.patch_metadata(ref, add_finalizers=[wk.FINALIZER_NODECLASS_TERMINATION])
        patched |= self._stamp_hashes(nodeclass, ref, [c for c in nodeclaims if belongs_to(c, nodeclass)])
        status, errors = self.resolve_status(nodeclass)
        if status != nodeclass.status:
            # Our own metadata patches moved the resourceVersion: write onto the class as it is now, or the
            # status write would conflict with them on every new class.
            current = self._cluster.nodeclass(nodeclass.name) if patched else nodeclass
            if current is not None:
                self._cluster.write_status(current.model_copy(update={"status": status}))
        self._expire_capacity_blocks(status, [c for c in nodeclaims if belongs_to(c, nodeclass)])
        ready = get_condition(status.conditions, READY)
        deprecated = self._warn_deprecated(nodeclass, status)
        return Outcome(nodeclass.name, RECONCILED, ready.status if ready else None, "; ".join(errors), deprecated)

    def _expire_capacity_blocks(self, status: EC2NodeClassStatus, nodeclaims: Sequence[NodeClaim]) -> None:
        """Delete the NodeClaims in a capacity block that is expiring (CAPACITY_BLOCK_LEAD before its end, 10 minutes
        before EC2 reclaims the instances): Karpenter's capacityreservation.expiration controller, so that their pods
        are drained onto other capacity in time."""
        for claim in expiring_claims(nodeclaims, status.capacity_reservations or []):
            if self._cluster.delete(claim.ref):
                rid = (claim.metadata.labels or {})[wk.LABEL_CAPACITY_RESERVATION_ID]
                log.info("deleting NodeClaim %s: capacity block %s is expiring", claim.name, rid)

    def _warn_deprecated(self, nodeclass: EC2NodeClass, status: EC2NodeClassStatus) -> tuple[str, ...]:
        """An ``AMIDeprecated`` Warning event (deduplicated by the recorder) when the class resolves to deprecated
        images: a deprecated image is chosen only when nothing newer and not deprecated matches, and new nodes and
        drift replacements then boot it, which nobody should learn from a failed launch."""
        amis = [a for a in status.amis or [] if a.deprecated]
        if not amis:
            return ()
        names = ", ".join(f"{a.id} ({a.name})" if a.name else a.id for a in amis)
        message = f"resolves to deprecated AMIs {names}: no non-deprecated AMI matches amiSelectorTerms for them"
        log.warning("EC2NodeClass %s %s", nodeclass.name, message)
        self._cluster.record_event(Event(nodeclass.ref, AMI_DEPRECATED, message, "Warning"))
        return tuple(a.id for a in amis)

    def resolve_status(self, nodeclass: EC2NodeClass) -> tuple[EC2NodeClassStatus, list[str]]:
        """The class's new status, and the transient errors that left parts of it as they were."""
        status = nodeclass.status or EC2NodeClassStatus()
        updates: dict[str, Any] = {}
        conditions: list[Condition] = list(status.conditions or [])
        generation, now, errors = nodeclass.metadata.generation, self._clock(), []
        for check in self._checks:
            refusal = check.refuse(nodeclass)
            if refusal is not None:
                found, status_, (reason, message) = None, FALSE, refusal
            else:
                try:
                    found, status_, reason, message = check.resolve(nodeclass), TRUE, check.condition, ""
                except (NothingMatchedError, ResolutionRefusedError) as error:
                    found, status_, message = None, FALSE, str(error)
                    refused = check.refused_reason or f"{check.condition}Refused"
                    reason = check.not_found_reason if isinstance(error, NothingMatchedError) else refused
                except (TransientCloudError, CloudProviderError) as error:
                    errors.append(f"{check.condition}: {error}")  # keep what we had; the next pass retries
                    continue
            if check.field is not None:
                updates[check.field] = found
            conditions = set_condition(
                conditions, check.condition, status_, reason, message, now=now, observed_generation=generation
            )
        conditions = roll_up_ready(conditions, self._dependents, now=now, observed_generation=generation)
        return status.model_copy(update={**updates, "conditions": conditions}), errors

    def _stamp_hashes(self, nodeclass: EC2NodeClass, ref: ObjectRef, nodeclaims: Sequence[NodeClaim]) -> bool:
        """Stamp the class (True when it needed it) and re-stamp its NodeClaims of another hash version."""
        wanted = {
            wk.ANNOTATION_NODECLASS_HASH: nodeclass_hash(nodeclass),
            wk.ANNOTATION_NODECLASS_HASH_VERSION: NODECLASS_HASH_VERSION,
        }
        current = nodeclass.metadata.annotations or {}
        stamp = any(current.get(k) != v for k, v in wanted.items())
        if stamp:
            self._cluster.patch_metadata(ref, annotations=dict(wanted))
        for claim in nodeclaims:
            # A NodeClaim stamped under another hash version cannot be compared: re-stamp it, don't drift it.
            annotations = claim.metadata.annotations or {}
            if annotations.get(wk.ANNOTATION_NODECLASS_HASH_VERSION) != NODECLASS_HASH_VERSION:
                self._cluster.patch_metadata(claim.ref, annotations=dict(wanted))
        return stamp

    def _finalize(self, nodeclass: EC2NodeClass, ref: ObjectRef, nodeclaims: Sequence[NodeClaim]) -> Outcome:
        if wk.FINALIZER_NODECLASS_TERMINATION not in (nodeclass.metadata.finalizers or []):
            return Outcome(nodeclass.name, FINALIZED)
        if nodeclaims:
            names = ", ".join(sorted(c.name for c in nodeclaims)[:5])
            message = f"waiting on {len(nodeclaims)} NodeClaim(s) to terminate: {names}"
            self._cluster.record_event(Event(ref, "WaitingOnNodeClaimTermination", message))
            return Outcome(nodeclass.name, WAITING, message=message)
        self._resolver.cleanup(nodeclass)
        self._cluster.patch_metadata(ref, remove_finalizers=[wk.FINALIZER_NODECLASS_TERMINATION])
        return Outcome(nodeclass.name, FINALIZED, message="instance profile and launch templates deleted")
