"""The garbage collection pass: read the cloud, then the cluster, decide (``decisions``), act through the ports.
The same reading relabels reserved nodes whose reservation ended (``controllers.capacitytype``).

One pass at a time: the pass takes the garbage collection lease in shared state first and does nothing when
another pass holds it. Each action stands alone: a failure is logged and counted, and the next pass retries it.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from datetime import datetime, timedelta
from functools import partial
from typing import TypeVar

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.cloudprovider.errors import NodeClaimNotFoundError
from autoscaler.cloudprovider.lease import Leases, holding
from autoscaler.cloudprovider.owned import (
    OwnedInstanceProfile,
    OwnedInstanceProfiles,
    OwnedLaunchTemplate,
    OwnedLaunchTemplates,
)
from autoscaler.cloudprovider.port import CloudProvider
from autoscaler.controllers import capacitytype
from autoscaler.controllers.garbage_collection import decisions
from autoscaler.controllers.garbage_collection.decisions import GRACE, ClusterView, Decision
from autoscaler.controllers.garbage_collection.report import (
    INSTANCE,
    INSTANCE_PROFILE,
    LAUNCH_TEMPLATE,
    NODE,
    NODECLAIM,
    Collected,
    Failure,
    Report,
)
from autoscaler.kube.objects import Node
from autoscaler.kube.port import Cluster, ClusterError, Event, ObjectRef
from autoscaler.settings import GARBAGE_COLLECTION_LEASE, GARBAGE_COLLECTION_LEASE_SECONDS

log = logging.getLogger(__name__)
Value = TypeVar("Value")
Owned = TypeVar("Owned", OwnedLaunchTemplate, OwnedInstanceProfile)

# Event reasons, one per kind of resource collected.
INSTANCE_COLLECTED = "InstanceGarbageCollected"
NODECLAIM_COLLECTED = "NodeClaimGarbageCollected"
LAUNCH_TEMPLATE_COLLECTED = "LaunchTemplateGarbageCollected"
INSTANCE_PROFILE_COLLECTED = "InstanceProfileGarbageCollected"
TIME_MARGIN_SECONDS = 5.0  # no new action starts with less time than this left in the invocation


def _forever() -> float:
    return math.inf


class GarbageCollector:
    def __init__(
        self,
        cluster: Cluster,
        cloud: CloudProvider,
        launch_templates: OwnedLaunchTemplates,
        instance_profiles: OwnedInstanceProfiles,
        leases: Leases,
        *,
        clock: Callable[[], datetime],
        grace: timedelta = GRACE,
        lease_ttl: timedelta = timedelta(seconds=GARBAGE_COLLECTION_LEASE_SECONDS),
    ) -> None:
        self._cluster, self._cloud = cluster, cloud
        self._templates, self._profiles, self._leases = launch_templates, instance_profiles, leases
        self._clock, self._grace, self._lease_ttl = clock, grace, lease_ttl

    def run(self, holder: str, time_left: Callable[[], float] = _forever) -> Report:
        """One pass under the lease; ``holder`` names this pass (the Lambda request id), ``time_left`` says how
        many seconds the invocation has left."""
        with holding(self._leases, GARBAGE_COLLECTION_LEASE, holder, self._lease_ttl) as held:
            if not held:
                log.info("another garbage collection pass holds the lease; skipping")
                return Report(skipped="another pass holds the garbage collection lease")
            return self.collect(time_left)

    def collect(self, time_left: Callable[[], float] = _forever) -> Report:
        """One pass without the lease (for callers that serialize passes themselves)."""
        act = _Actions(Report(), time_left)
        # The cloud first, then the cluster, as Karpenter does: anything launched between the two readings
        # already has its NodeClaim in the cluster reading, so it is never mistaken for a leak.
        instances = act.listing(INSTANCE, self._cloud.list)
        templates = act.listing(LAUNCH_TEMPLATE, self._templates.list_owned)
        profiles = act.listing(INSTANCE_PROFILE, self._profiles.list_owned)
        try:
            view = ClusterView.read(
                self._cluster.list_raw("NodeClaim"), self._cluster.list_raw("EC2NodeClass"), self._cluster.nodes()
            )
        except ClusterError as error:
            log.warning("garbage collection could not read the cluster: %s", error)
            act.report.failures.append(Failure("Cluster", "", f"{type(error).__name__}: {error}"))
            return act.report
        now = self._clock()
        if instances is not None:
            self._instances(act, decisions.leaked_instances(instances, view, now, self._grace), view)
            self._nodeclaims(act, instances, view, now)
            self._capacity_types(act, instances, view)
        if templates is not None:
            stale = decisions.stale_launch_templates(templates, view, now, self._grace)
            self._remove(act, LAUNCH_TEMPLATE, stale, self._templates.delete_owned, LAUNCH_TEMPLATE_COLLECTED)
        if profiles is not None and instances is not None:  # the classes instances still run from keep profiles
            live_classes = frozenset(i.spec.node_class_ref.name for i in instances)
            orphaned = decisions.orphaned_instance_profiles(profiles, view, live_classes, now, self._grace)
            self._remove(act, INSTANCE_PROFILE, orphaned, self._profiles.delete_owned, INSTANCE_PROFILE_COLLECTED)
        return act.report

    # --- instances without NodeClaims ---------------------------------------------------------------
    def _instances(self, act: _Actions, leaked: list[Decision[NodeClaim]], view: ClusterView) -> None:
        for decision in leaked:
            instance = decision.item
            provider_id = (instance.status.provider_id if instance.status else None) or ""
            labels = instance.metadata.labels or {}
            nodepool, capacity = labels.get(wk.LABEL_NODEPOOL, ""), labels.get(wk.LABEL_CAPACITY_TYPE, "")
            if not act.run(INSTANCE, provider_id, partial(self._terminate, instance)):
                continue
            _collected(act, Collected(INSTANCE, provider_id, decision.reason, nodepool, capacity), "terminated leaked")
            message = f"instance {provider_id} {decision.reason}: terminated"
            node = view.node_of(provider_id)
            if node is None:
                if nodepool:
                    self._cluster.record_event(Event(ObjectRef("NodePool", nodepool), INSTANCE_COLLECTED, message))
                continue
            ref = Node(node).ref
            self._cluster.record_event(Event(ref, INSTANCE_COLLECTED, message))
            if act.run(NODE, ref.name, partial(self._cluster.delete, ref)):
                _collected(act, Collected(NODE, ref.name, f"its instance {provider_id} was leaked"), "deleted")

    def _terminate(self, instance: NodeClaim) -> bool:
        try:
            self._cloud.delete(instance)
        except NodeClaimNotFoundError:
            return False  # gone since the listing: nothing left to collect
        return True

    # --- NodeClaims without instances ---------------------------------------------------------------
    def _nodeclaims(self, act: _Actions, instances: list[NodeClaim], view: ClusterView, now: datetime) -> None:
        live = frozenset(
            i.status.provider_id
            for i in instances
            if i.status and i.status.provider_id and not i.metadata.deletion_timestamp
        )
        for nodeclaim in decisions.nodeclaims_missing_instances(view, live, now, self._grace):
            provider_id = (nodeclaim.status.provider_id if nodeclaim.status else None) or ""
            if not act.attempt(NODECLAIM, nodeclaim.name, partial(self._instance_gone, provider_id)):
                continue
            node = decisions.ready_node_keeps(nodeclaim, view)
            if node is not None:
                reason = f"instance {provider_id} is gone but Node {Node(node).name} is still Ready"
                act.report.kept.append(Collected(NODECLAIM, nodeclaim.name, reason))
                continue
            ref = nodeclaim.ref
            if not act.run(NODECLAIM, nodeclaim.name, partial(self._cluster.delete, ref)):
                continue
            labels = nodeclaim.metadata.labels or {}
            reason = f"its instance {provider_id} no longer exists"
            nodepool, capacity = labels.get(wk.LABEL_NODEPOOL, ""), labels.get(wk.LABEL_CAPACITY_TYPE, "")
            _collected(act, Collected(NODECLAIM, nodeclaim.name, reason, nodepool, capacity), "deleted")
            self._cluster.record_event(Event(ref, NODECLAIM_COLLECTED, f"{reason}: NodeClaim deleted"))

    def _instance_gone(self, provider_id: str) -> bool:
        """Asked by ID: the listing only shows instances that still carry the cluster's tags."""
        try:
            instance = self._cloud.get(provider_id)
        except NodeClaimNotFoundError:
            return True
        return bool(instance.metadata.deletion_timestamp)  # shutting down: going away on its own

    # --- reserved nodes whose reservation ended ------------------------------------------------------
    def _capacity_types(self, act: _Actions, instances: list[NodeClaim], view: ClusterView) -> None:
        for demotion in capacitytype.demotions(instances, view.nodeclaims, view.node_of):
            ref = demotion.ref
            if act.run(ref.kind, ref.name, partial(capacitytype.demote, self._cluster, demotion)):
                act.report.demoted.append(f"{ref.kind}/{ref.name}")

    # --- launch templates and instance profiles -----------------------------------------------------
    def _remove(
        self,
        act: _Actions,
        resource: str,
        found: list[Decision[Owned]],
        delete: Callable[[Owned], bool],
        event_reason: str,
    ) -> None:
        for decision in found:
            item = decision.item
            if not act.run(resource, item.name, partial(delete, item)):
                continue
            _collected(act, Collected(resource, item.name, decision.reason), "deleted")
            message = f"{resource} {item.name} deleted: {decision.reason}"
            self._cluster.record_event(Event(ObjectRef("EC2NodeClass", item.nodeclass), event_reason, message))


class _Actions:
    """Runs each action on its own: a failure is recorded, not raised; nothing new starts when time runs out."""

    def __init__(self, report: Report, time_left: Callable[[], float]) -> None:
        self.report, self._time_left = report, time_left

    def listing(self, resource: str, read: Callable[[], list[Value]]) -> list[Value] | None:
        try:
            return read()
        except Exception as error:
            log.warning("garbage collection could not list %s resources: %s", resource, error)
            self.report.failures.append(Failure(resource, "", f"{type(error).__name__}: {error}"))
            return None

    def attempt(self, resource: str, name: str, action: Callable[[], Value]) -> Value | None:
        """The action's answer, or None when it failed or there was no time left for it."""
        if self._time_left() < TIME_MARGIN_SECONDS:
            self.report.deferred += 1
            return None
        try:
            return action()
        except Exception as error:
            log.warning("garbage collection of %s %s failed: %s", resource, name, error)
            self.report.failures.append(Failure(resource, name, f"{type(error).__name__}: {error}"))
            return None

    def run(self, resource: str, name: str, action: Callable[[], object]) -> bool:
        """True when the action ran and changed something (an answer of False means it was already done)."""
        return self.attempt(resource, name, action) not in (None, False)


def _collected(act: _Actions, entry: Collected, done: str) -> None:
    """Count a removal in the pass's report and log it, with its reason, as a structured decision."""
    act.report.collected.append(entry)
    log.info(
        "%s %s %s: %s",
        done,
        entry.resource,
        entry.name,
        entry.reason,
        extra={"decision": "collected", "resource": entry.resource, "collected": entry.name, "reason": entry.reason},
    )
