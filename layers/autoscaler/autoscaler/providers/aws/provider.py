"""The CloudProvider port over EC2 (see ``cloudprovider.port`` for each method's contract).

Beyond the port, the batch forms ``create_many``, ``get_many`` and ``delete_many`` serve callers that
handle many NodeClaims at once: identical launches share one CreateFleet call, and describes and
terminations go out in batches.
"""

from __future__ import annotations

import builtins
import json
import logging
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import astuple
from datetime import datetime, timedelta

from botocore.exceptions import ClientError

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.conditions import READY, is_true, timestamp
from autoscaler.apis.v1.ec2nodeclass import EC2NodeClass
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.apis.v1.nodepool import NodePool
from autoscaler.clock import utc_now
from autoscaler.cloudprovider.errors import (
    CloudProviderError,
    ForeignInstanceError,
    InsufficientCapacityError,
    NodeClaimNotFoundError,
    NodeClassNotReadyError,
)
from autoscaler.cloudprovider.nodeclass import ResolutionRefusedError
from autoscaler.cloudprovider.overlays import Overlays
from autoscaler.cloudprovider.types import Drift, DriftReason, InstanceType
from autoscaler.cloudprovider.zonalshift import ShiftedZones
from autoscaler.providers.aws import drift, nodeclaims, reserved
from autoscaler.providers.aws.adapters import AWSAdapters
from autoscaler.providers.aws.cache import TTLCache
from autoscaler.providers.aws.catalog import ReservedCapacity
from autoscaler.providers.aws.clients import error_code, error_message, is_not_found
from autoscaler.providers.aws.ec2instance import Instance, ProviderIDError, instance_id
from autoscaler.providers.aws.launcher import LaunchPlan
from autoscaler.providers.aws.placementgroups import PlacementGroup
from autoscaler.settings import Settings

log = logging.getLogger(__name__)
INSTANCE_TYPES_MEMO = timedelta(seconds=30)
SHUTTING_DOWN = "shutting-down"
NodeClassLookup = Callable[[str], EC2NodeClass | None]


class AWSCloudProvider:
    """Over the container's AWS adapters (``aws``, built by ``autoscaler.runtime``), reading EC2NodeClasses
    through ``nodeclasses`` (name -> class, or None) so that it needs no Kubernetes client of its own."""

    def __init__(
        self,
        settings: Settings,
        aws: AWSAdapters,
        nodeclasses: NodeClassLookup,
        *,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.settings, self.aws = settings, aws
        self._nodeclasses, self._clock = nodeclasses, clock
        self._types_memo: TTLCache[builtins.list[InstanceType]] = TTLCache(INSTANCE_TYPES_MEMO, clock)

    # --- node classes and instance types ------------------------------------------------------------
    def _ready_nodeclass(self, name: str) -> EC2NodeClass:
        nodeclass = self._nodeclasses(name)
        if nodeclass is None:
            raise NodeClassNotReadyError(f"EC2NodeClass {name!r} does not exist")
        if nodeclass.metadata.deletion_timestamp:
            raise NodeClassNotReadyError(f"EC2NodeClass {name!r} is being deleted")
        if not is_true(nodeclass.status.conditions if nodeclass.status else None, READY):
            raise NodeClassNotReadyError(f"EC2NodeClass {name!r} is not Ready")
        return nodeclass

    def _instance_types(
        self, nodeclass: EC2NodeClass, annotations: dict[str, str] | None, *, launching: bool = False
    ) -> list[InstanceType]:
        """The class's instance types, memoized briefly: a drift or garbage-collection pass asks once per
        NodeClaim, and the answer only changes with the class, its kubelet settings or unavailability. Where
        launches are decided (``launching``), offerings in zones ARC shifts the cluster away from are unavailable;
        elsewhere ARC is not asked (as Karpenter asks it only for offerings)."""
        try:
            kubelet = nodeclaims.kubelet_for(nodeclass, annotations)
        except nodeclaims.KubeletCompatibilityError as error:
            raise NodeClassNotReadyError(str(error)) from error
        unavailable = self.aws.unavailable.unavailable()
        group = self._placement_group(nodeclass)
        shifted = self.aws.zonal_shifts.shifted_away() if launching else frozenset()
        reserved = self._reserved_capacity(nodeclass)
        key = json.dumps(
            [
                [(r.id, reserved.available(r.id), r.state) for r in reserved.reservations] if reserved else None,
                group.id if group else None,
                sorted(shifted),
                nodeclass.spec.to_dict(),
                [s.to_dict() for s in (nodeclass.status.subnets or [])] if nodeclass.status else [],
                kubelet.to_dict() if kubelet else None,
                sorted(astuple(k) for k in unavailable),
            ],
            sort_keys=True,
        )
        return self._types_memo.get_or_load(
            key,
            lambda: self.aws.catalog.instance_types(nodeclass, kubelet, unavailable, group, shifted, reserved=reserved),
        )

    def _reserved_capacity(self, nodeclass: EC2NodeClass) -> ReservedCapacity | None:
        """The class's reservations for reserved offerings; None while the ReservedCapacity gate is off."""
        if not self.settings.feature_gates.reserved_capacity:
            return None
        found = (nodeclass.status.capacity_reservations if nodeclass.status else None) or []
        terms = nodeclass.spec.capacity_reservation_selector_terms
        if found and terms:
            # Each function keeps its own availability cache: described here too (cached a minute, as Karpenter).
            try:
                self.aws.reservations.reservations(terms)
            except (ResolutionRefusedError, CloudProviderError) as error:
                log.warning("reservations of EC2NodeClass %s not described: %s", nodeclass.name, error)
        return ReservedCapacity(found, self.aws.reservations.available)

    def _placement_group(self, nodeclass: EC2NodeClass) -> PlacementGroup | None:
        """The class's placement group; NodeClassNotReadyError when it selects one that is not available."""
        selector = nodeclass.spec.placement_group_selector
        group = self.aws.placement_groups.resolve(selector)
        if selector is not None and group is None:
            raise NodeClassNotReadyError(f"EC2NodeClass {nodeclass.name!r}'s placement group is not available")
        return group

    def instance_types(self, nodepool: NodePool) -> builtins.list[InstanceType]:
        nodeclass = self._ready_nodeclass(nodepool.spec.template.spec.node_class_ref.name)
        return self._instance_types(nodeclass, nodepool.metadata.annotations, launching=True)

    def shifted_zones(self) -> ShiftedZones:
        return ShiftedZones.read(self.aws.zonal_shifts)

    # --- launching ----------------------------------------------------------------------------------
    def create(self, nodeclaim: NodeClaim) -> NodeClaim:
        outcome = self.create_many([nodeclaim])[0]
        self.settle_launches()
        if isinstance(outcome, CloudProviderError):
            raise outcome
        return outcome

    def create_many(
        self, claims: Sequence[NodeClaim], overlays: Overlays | None = None
    ) -> builtins.list[NodeClaim | CloudProviderError]:
        """Launch each NodeClaim; answer i is NodeClaim i as launched, or the error that stopped it. With the pass's
        evaluated ``overlays``, a NodeClaim of a NodePool launches on its NodePool's overlaid types (as Karpenter's
        Create: standalone NodeClaims get none)."""
        plannings = self._launch_plans(claims, overlays)
        answers = [p if isinstance(p, CloudProviderError) else p[0].nodeclaim for p in plannings]
        self._launched_before(claims, answers, overlays)  # before any launch: only planning refused them yet
        planned = [(i, p) for i, p in enumerate(plannings) if not isinstance(p, CloudProviderError)]
        launched = self.aws.launcher.launch([plan for _, (plan, _) in planned])
        for (index, (plan, nodeclass)), instance in zip(planned, launched, strict=True):
            answers[index] = (
                instance
                if isinstance(instance, CloudProviderError)
                else self._recorded(plan.nodeclaim, nodeclass, instance, plan.instance_types, overlays)
            )
        return answers

    def _recorded(
        self,
        claim: NodeClaim,
        nodeclass: EC2NodeClass,
        instance: Instance,
        types: Mapping[str, InstanceType],
        overlays: Overlays | None,
    ) -> NodeClaim:
        """``claim`` as launched on ``instance``, of one of ``types`` or (launched by an earlier pass, its offering
        marked unavailable since) of a type described from the class's catalog: it must get its capacity."""
        instance_type = types.get(instance.instance_type) or self._type_named(
            nodeclass, instance.instance_type, claim, overlays
        )
        zone_id = nodeclaims.zone_id(nodeclass, instance.zone)
        return nodeclaims.stamp_hash(nodeclaims.launched(claim, instance, instance_type, zone_id), nodeclass)

    def _launched_before(
        self,
        claims: Sequence[NodeClaim],
        answers: builtins.list[NodeClaim | CloudProviderError],
        overlays: Overlays | None,
    ) -> None:
        """In ``answers``, a NodeClaim refused for want of any available offering that an earlier pass launched (its
        status write lost) gets its instance back, not an error the lifecycle would delete it for, losing a node."""
        stuck = {
            claim.metadata.name: index
            for index, (claim, answer) in enumerate(zip(claims, answers, strict=True))
            if isinstance(answer, InsufficientCapacityError) and claim.metadata.name
        }
        for name, instance in self.aws.launcher.tagged(builtins.list(stuck)).items():
            claim = claims[stuck[name]]
            nodeclass = self._nodeclasses(claim.spec.node_class_ref.name)
            if nodeclass is not None:
                answers[stuck[name]] = self._recorded(claim, nodeclass, instance, {}, overlays)

    def launch_plans(
        self, claims: Sequence[NodeClaim], overlays: Overlays | None = None
    ) -> builtins.list[LaunchPlan | CloudProviderError]:
        """How ``create_many`` would launch each NodeClaim (capacity type, the reservation it targets, the types and
        zones offered), or the error that would stop it; read-only, for ``autoscaler plan``."""
        return [p if isinstance(p, CloudProviderError) else p[0] for p in self._launch_plans(claims, overlays)]

    def _launch_plans(
        self, claims: Sequence[NodeClaim], overlays: Overlays | None
    ) -> builtins.list[tuple[LaunchPlan, EC2NodeClass] | CloudProviderError]:
        """Each NodeClaim's launch plan with its class, in order: a reservation that earlier claims fill is
        unavailable to the later ones, which plan on-demand or spot instead (Karpenter's reservation count)."""
        found: builtins.list[tuple[LaunchPlan, EC2NodeClass] | CloudProviderError] = []
        taken: Counter[str] = Counter()  # launches planned into each reservation by this call
        for claim in claims:
            try:
                nodeclass = self._ready_nodeclass(claim.spec.node_class_ref.name)
                types = self._types_for(claim, nodeclass, overlays, launching=True)
                group = self._placement_group(nodeclass)  # resolved already for the types, so cached
                plan = self.aws.launcher.plan(claim, nodeclass, reserved.less_taken(types, taken), group)
            except CloudProviderError as error:
                found.append(error)
                continue
            if plan.reservation is not None:
                taken[plan.reservation.id] += 1
            found.append((plan, nodeclass))
        return found

    def _types_for(
        self, claim: NodeClaim, nodeclass: EC2NodeClass, overlays: Overlays | None, *, launching: bool = False
    ) -> builtins.list[InstanceType]:
        """The class's instance types as ``claim`` may launch them: its NodePool's overlays applied."""
        types = self._instance_types(nodeclass, claim.metadata.annotations, launching=launching)
        if overlays is not None and (pool := (claim.metadata.labels or {}).get(wk.LABEL_NODEPOOL)):
            types = overlays.apply(pool, types)
        return types

    # --- reading and terminating --------------------------------------------------------------------
    def _as_nodeclaim(self, instance: Instance, details: bool = True) -> NodeClaim:
        """The NodeClaim view of ``instance``; with ``details``, capacity and labels from its instance type
        when the class and the catalog can say (they are decoration: a function without the catalog's
        permissions still gets the instance)."""
        instance_type, zone_id = None, None
        if details:
            nodeclass = self._nodeclasses(instance.tags.get(wk.TAG_NODECLASS, ""))
            zone_id = nodeclaims.zone_id(nodeclass, instance.zone)
            if nodeclass is not None:
                instance_type = self._type_named(nodeclass, instance.instance_type)
        claim = nodeclaims.from_instance(instance, instance_type, zone_id)
        if instance.state == SHUTTING_DOWN:  # as Karpenter reports it: termination stops waiting here
            claim.metadata.deletion_timestamp = timestamp(self._clock())
        return claim

    def _type_named(
        self, nodeclass: EC2NodeClass, name: str, claim: NodeClaim | None = None, overlays: Overlays | None = None
    ) -> InstanceType | None:
        """``name`` as the class's catalog describes it (capacity, allocatable, labels; as ``claim`` sees it with
        the pass's ``overlays``, when given), or None when the class is not resolved or the catalog cannot be read
        (the details are decoration, never worth a failure)."""
        if not (nodeclass.status and nodeclass.status.subnets):
            return None
        try:
            types = self._types_for(claim, nodeclass, overlays) if claim else self._instance_types(nodeclass, None)
            return next((t for t in types if t.name == name), None)
        except (CloudProviderError, ClientError) as error:
            log.info("no capacity details for instance type %s: %s", name, error)
            return None

    def get(self, provider_id: str) -> NodeClaim:
        found = self.get_many([provider_id])[provider_id]
        if isinstance(found, CloudProviderError):
            raise found
        return found

    def settle_launches(self) -> None:
        self.aws.launcher.settle()

    def get_many(self, provider_ids: Sequence[str]) -> dict[str, NodeClaim | CloudProviderError]:
        """Provider ID -> the live instance as a NodeClaim, or NodeClaimNotFoundError; one describe per batch."""
        ids: dict[str, str] = {}
        answers: dict[str, NodeClaim | CloudProviderError] = {}
        for provider_id in provider_ids:
            try:
                ids[provider_id] = instance_id(provider_id)
            except ProviderIDError as error:
                answers[provider_id] = NodeClaimNotFoundError(str(error))
        live = self.aws.instances.describe(list(ids.values()))
        for provider_id, iid in ids.items():
            instance = live.get(iid)
            answers[provider_id] = (
                self._as_nodeclaim(instance) if instance else NodeClaimNotFoundError(f"instance {iid} does not exist")
            )
        return answers

    def list(self) -> builtins.list[NodeClaim]:
        """Identity only (provider ID, launch time, tags as labels and name): garbage collection, the caller,
        needs no capacity, and reading the catalog for every instance would cost calls it may not make."""
        return [self._as_nodeclaim(i, details=False) for i in self.aws.instances.owned(self.settings.cluster_name)]

    def delete(self, nodeclaim: NodeClaim) -> None:
        error = self.delete_many([nodeclaim])[0]
        if error is not None:
            raise error

    def delete_many(self, claims: Sequence[NodeClaim]) -> builtins.list[CloudProviderError | None]:
        """Terminate the claims' instances in batches; answer i is None, NodeClaimNotFoundError, or
        ForeignInstanceError (a live instance this cluster does not own, not touched)."""
        ids: dict[int, str] = {}
        answers: builtins.list[CloudProviderError | None] = [None] * len(claims)
        for index, claim in enumerate(claims):
            try:
                ids[index] = instance_id(claim.status.provider_id if claim.status else "")
            except ProviderIDError:
                answers[index] = NodeClaimNotFoundError(f"NodeClaim {claim.name} has no instance (no provider ID)")
        terminated, foreign = self.aws.instances.terminate(list(ids.values()), self.settings.cluster_name)
        for index, iid in ids.items():
            if iid in foreign:
                answers[index] = self._foreign(claims[index], iid)
            elif iid not in terminated:
                answers[index] = NodeClaimNotFoundError(f"instance {iid} is already terminated")
        return answers

    def _foreign(self, claim: NodeClaim, iid: str) -> ForeignInstanceError:
        log.warning(
            "NodeClaim %s names instance %s, which cluster %s does not own: not terminated",
            claim.name,
            iid,
            self.settings.cluster_name,
            extra={"decision": "foreign-instance-skipped", "nodeclaim": claim.name, "instance": iid},
        )
        return ForeignInstanceError(f"instance {iid} is not owned by cluster {self.settings.cluster_name}")

    # --- drift ---------------------------------------------------------------------------------------
    def drift(self, nodeclaim: NodeClaim) -> Drift | None:
        """Why the NodeClaim's instance no longer matches its class (reason and what changed), or None."""
        found = self.drift_many([nodeclaim])[0]
        if isinstance(found, CloudProviderError):
            raise found
        return found

    def drift_many(self, claims: Sequence[NodeClaim]) -> builtins.list[Drift | CloudProviderError | None]:
        """``drift`` for many NodeClaims with one DescribeInstances per 200 of them: answer i is claim i's drift,
        None, or the CloudProviderError (NodeClassNotReadyError, NodeClaimNotFoundError, ...) that stopped it."""
        answers: builtins.list[Drift | CloudProviderError | None] = [None] * len(claims)
        classes: dict[int, EC2NodeClass] = {}
        ids: dict[int, str] = {}
        for index, claim in enumerate(claims):
            try:
                nodeclass = self._ready_nodeclass(claim.spec.node_class_ref.name)
                static = drift.static_drift(nodeclass.metadata.annotations or {}, claim.metadata.annotations or {})
                if static is None:
                    ids[index] = instance_id(claim.status.provider_id if claim.status else "")
                    classes[index] = nodeclass
                answers[index] = static
            except ProviderIDError as error:
                answers[index] = NodeClaimNotFoundError(f"NodeClaim {claim.name}: {error}")
            except CloudProviderError as error:
                answers[index] = error
        live = self.aws.instances.describe(list(ids.values()))
        for index, iid in ids.items():
            instance = live.get(iid)
            if instance is None:
                answers[index] = NodeClaimNotFoundError(f"NodeClaim {claims[index].name}'s instance does not exist")
                continue
            try:
                answers[index] = self._dynamic_drift(claims[index], classes[index], instance)
            except CloudProviderError as error:
                answers[index] = error
        return answers

    def _dynamic_drift(self, claim: NodeClaim, nodeclass: EC2NodeClass, live: Instance) -> Drift | None:
        type_labels = dict(claim.metadata.labels or {})
        type_labels.setdefault(wk.LABEL_INSTANCE_TYPE, live.instance_type)
        known = next((t for t in self._instance_types(nodeclass, None) if t.name == live.instance_type), None)
        if known is not None:
            type_labels = {**type_labels, **known.labels}
        group = self._placement_group(nodeclass)
        return drift.dynamic_drift(live, nodeclass, type_labels, group.id if group else "")

    def is_drifted(self, nodeclaim: NodeClaim) -> DriftReason | None:
        found = self.drift(nodeclaim)
        if found is None:
            return None
        log.info("NodeClaim %s drifted: %s", nodeclaim.name, found.message)
        return found.reason

    def tag_registered(self, nodeclaim: NodeClaim, node_name: str) -> None:
        """After registration: tag the instance with ``Name`` (the node) and ``karpenter.sh/nodeclaim``.
        Raises NodeClaimNotFoundError (no provider ID, or the instance is gone), TransientCloudError, or
        CloudProviderError for any other refusal."""
        try:
            iid = instance_id(nodeclaim.status.provider_id if nodeclaim.status else "")
        except ProviderIDError as error:
            raise NodeClaimNotFoundError(str(error)) from error
        try:
            self.aws.instances.tag([iid], {wk.TAG_NAME: node_name, wk.TAG_NODECLAIM: nodeclaim.name})
        except ClientError as error:
            if is_not_found(error):
                raise NodeClaimNotFoundError(f"instance {iid} does not exist") from error
            raise CloudProviderError(f"tagging {iid}: {error_code(error)}: {error_message(error)}") from error
