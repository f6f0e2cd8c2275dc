"""The launch path: plan each NodeClaim's fleet (types, capacity type, AMIs, subnets, launch templates),
merge identical plans into one CreateFleet call, and turn EC2's answer into instances or typed errors."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from autoscaler.apis.resources import parse_resources
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.ec2nodeclass import EC2NodeClass
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.cloudprovider.errors import (
    CloudProviderError,
    CreateError,
    InsufficientCapacityError,
    NodeClassNotReadyError,
    OfferingKey,
    TransientCloudError,
)
from autoscaler.cloudprovider.port import UnavailableOfferings
from autoscaler.cloudprovider.types import InstanceType, Reservation
from autoscaler.providers.aws import fleetrequest, selection, userdata
from autoscaler.providers.aws.clients import error_code, error_message
from autoscaler.providers.aws.ec2instance import Instance
from autoscaler.providers.aws.instances import Instances
from autoscaler.providers.aws.launchconfig import (
    LaunchConfig,
    TagCollisionError,
    nodeclaim_launch_config,
    nodeclaim_launch_tags,
)

if TYPE_CHECKING:
    from autoscaler.providers.aws.capacityreservations import CapacityReservations
    from autoscaler.providers.aws.cluster import ClusterDescriber
    from autoscaler.providers.aws.launchtemplates import LaunchTemplates
    from autoscaler.providers.aws.network import NetworkResolver
    from autoscaler.providers.aws.placementgroups import PlacementGroup

log = logging.getLogger(__name__)
FILTER_VALUES = 200  # values per DescribeInstances filter, within EC2's limit
FLEET_THREADS = 8  # CreateFleet calls of one launch in flight together (EC2's mutating bucket refills 5 a second)
TEMPLATE_NOT_FOUND = ("InvalidLaunchTemplateName.NotFoundException", "InvalidLaunchTemplateId.NotFound")
IDEMPOTENT_MISMATCH = "IdempotentParameterMismatch"


@dataclass
class LaunchPlan:
    """One NodeClaim's launch: the templates to ensure and the fleet request (without token and count)."""

    nodeclaim: NodeClaim
    capacity_type: str
    templates: list[tuple[LaunchConfig, list[selection.Override]]]
    tags: dict[str, str]
    context: str | None
    instance_types: dict[str, InstanceType] = field(default_factory=dict)
    zone_of_subnet: dict[str, str] = field(default_factory=dict)
    placement_group: str = ""  # the id of the group the instances launch into (the templates say so too)
    prioritized: bool = False  # a NodeOverlay priced its types: the fleet follows the overrides' priorities
    reservation: Reservation | None = None  # a reserved launch: the one capacity reservation it targets

    def cheapest_price(self) -> float | None:
        """The cheapest offering the fleet may get: of the plan's capacity type (and reservation), over the
        overrides' types and zones; None when none is priced."""
        prices = [
            offering.price
            for _, overrides in self.templates
            for override in overrides
            for offering in self.instance_types[override.instance_type].offerings
            if offering.zone == override.zone
            and offering.capacity_type == self.capacity_type
            and offering.available
            and (self.reservation is None or (offering.reservation and offering.reservation.id == self.reservation.id))
        ]
        return min(prices, default=None)

    @property
    def shape(self) -> str:
        """Plans with equal shapes ask EC2 for the same thing and share one CreateFleet call."""
        return json.dumps(
            [
                self.capacity_type,
                self.tags,
                self.context,
                self.prioritized,
                [(c.name, [o.to_request() for o in os]) for c, os in self.templates],
            ],
            sort_keys=True,
        )


def subnet_per_zone(subnet_zones: dict[str, str], free_ips: dict[str, int]) -> dict[str, str]:
    """Zone -> the subnet with the most free addresses (ties: the smaller id)."""
    best: dict[str, str] = {}
    for subnet, zone in sorted(subnet_zones.items()):
        if zone not in best or free_ips.get(subnet, 0) > free_ips.get(best[zone], 0):
            best[zone] = subnet
    return best


class Launcher:
    def __init__(
        self,
        cluster: ClusterDescriber,
        network: NetworkResolver,
        launch_templates: LaunchTemplates,
        instances: Instances,
        unavailable: UnavailableOfferings,
        *,
        reservations: CapacityReservations | None = None,
        open_reservations: bool = False,
    ) -> None:
        """``open_reservations``: the ReservedCapacity gate is off (``launchconfig.LaunchConfig``)."""
        self._cluster, self._network, self._templates = cluster, network, launch_templates
        self._open_reservations = open_reservations
        self._instances, self._unavailable, self._reservations = instances, unavailable, reservations
        self._tagging = ThreadPoolExecutor(max_workers=FLEET_THREADS, thread_name_prefix="nodeclaim-tags")
        self._tags_pending: list[Future[None]] = []
        self._pending_lock = threading.Lock()

    def plan(
        self,
        nodeclaim: NodeClaim,
        nodeclass: EC2NodeClass,
        instance_types: Sequence[InstanceType],
        group: PlacementGroup | None = None,
    ) -> LaunchPlan:
        """``nodeclaim``'s launch on ``instance_types`` of ``nodeclass``, into the class's placement ``group``."""
        status = nodeclass.status
        if not status or not status.subnets or not status.security_groups or not status.amis:
            raise NodeClassNotReadyError(
                f"EC2NodeClass {nodeclass.name} has no resolved subnets, security groups or AMIs"
            )
        if not status.instance_profile:
            raise NodeClassNotReadyError(f"EC2NodeClass {nodeclass.name} has no instance profile yet")
        requirements: selection.Requirements = nodeclaim.spec.requirements
        requests = parse_resources((nodeclaim.spec.resources.requests if nodeclaim.spec.resources else None) or {})
        candidates = selection.preferred(selection.launchable(instance_types, requirements, requests), requirements)
        if not candidates:
            raise InsufficientCapacityError(
                f"no instance type of EC2NodeClass {nodeclass.name} meets the NodeClaim's requirements and requests "
                "with an available offering"
            )
        capacity_type = selection.capacity_type(candidates, requirements)
        reservation = None
        if capacity_type == wk.CAPACITY_TYPE_RESERVED:
            # One reservation per launch (its template targets it), the cheapest: the offerings offered are its own.
            reservation, requirements = selection.narrowed_to_reservation(candidates, requirements)
            candidates = selection.preferred(candidates, requirements)
        zones = {s.id: s.zone for s in status.subnets}
        subnet_by_zone = subnet_per_zone(zones, self._network.free_ips(list(zones)))
        cluster = self._cluster.describe()
        try:
            tags = nodeclaim_launch_tags(nodeclaim, nodeclass, cluster.name)
        except TagCollisionError as error:  # Karpenter's reason for tags that fail its runtime check
            raise CreateError(f"EC2NodeClass {nodeclass.name}: {error}", reason="TagValidationFailed") from error
        efa = wk.RESOURCE_EFA in requests
        # As Karpenter: marked by the scheduler, which saw the overlaid prices ``instance_types`` carry here too.
        prioritized = wk.ANNOTATION_PRICE_OVERLAY_APPLIED in (nodeclaim.metadata.annotations or {})
        groups: dict[tuple[str, int, int], list[InstanceType]] = {}
        for it in candidates:
            image = selection.image_for(it, status.amis)
            if image is not None:
                efa_count = it.capacity.get(wk.RESOURCE_EFA, 0) if efa else 0
                groups.setdefault((image, it.capacity[wk.RESOURCE_PODS], efa_count), []).append(it)
        templates = []
        for (image, pods, efa_count), types in groups.items():
            try:
                config = nodeclaim_launch_config(
                    nodeclaim,
                    nodeclass,
                    cluster,
                    capacity_type=capacity_type,
                    image_id=image,
                    pods=pods,
                    instance_profile=status.instance_profile,
                    security_group_ids=(g.id for g in status.security_groups),
                    efa_count=efa_count,
                    placement_group_id=group.id if group else None,
                    reservation=reservation,
                    open_reservations=self._open_reservations,
                )
            except userdata.UserDataError as error:
                raise CreateError(f"EC2NodeClass {nodeclass.name}: {error}", reason="InvalidUserData") from error
            overrides = selection.overrides(
                types, requirements, capacity_type, subnet_by_zone, image, prioritized=prioritized
            )
            if overrides:
                templates.append((config, overrides))
        if not templates:
            raise InsufficientCapacityError(
                f"no offering of EC2NodeClass {nodeclass.name} has both an AMI and a subnet"
            )
        return LaunchPlan(
            nodeclaim,
            capacity_type,
            templates,
            tags,
            nodeclass.spec.context,
            {it.name: it for it in candidates},
            zones,
            group.id if group else "",
            prioritized,
            reservation,
        )

    def launch(self, plans: Sequence[LaunchPlan]) -> list[Instance | CloudProviderError]:
        """Launch every plan; the answer at index i is plan i's instance or error. Plans whose NodeClaim
        already has an instance (tagged ``karpenter.sh/nodeclaim`` at launch) get that instance back."""
        results: list[Instance | CloudProviderError | None] = [None] * len(plans)
        existing = self.tagged([p.nodeclaim.name for p in plans if p.nodeclaim.name])
        by_shape: dict[str, list[int]] = {}
        for index, plan in enumerate(plans):
            if plan.nodeclaim.name in existing:
                results[index] = existing[plan.nodeclaim.name]
            else:
                by_shape.setdefault(plan.shape, []).append(index)
        # Groups side by side: each CreateFleet takes a second or two, and a pass's NodeClaims of different zones or
        # shapes (a spread's, say) must not wait for one another's, as Karpenter's launch each NodeClaim at once.
        groups = list(by_shape.values())
        self._prepare_templates([plans[i] for indexes in groups for i in indexes])
        with ThreadPoolExecutor(max_workers=max(1, min(FLEET_THREADS, len(groups)))) as pool:
            launched = list(pool.map(lambda indexes: self._launch_group([plans[i] for i in indexes]), groups))
        for indexes, outcomes in zip(groups, launched, strict=True):
            for index, outcome in zip(indexes, outcomes, strict=True):
                results[index] = outcome
        return [r for r in results if r is not None]

    def settle(self) -> None:
        """Wait for the NodeClaim tags of every launch so far. They are written beside the launches, not before
        their answers: one CreateTags per instance meets EC2's CreateTags bucket (50, refilling 5 a second), and a
        chunk's launches must not wait for the previous chunk's tags. Failures are logged where they happen; a
        dying invocation dies here."""
        with self._pending_lock:
            pending, self._tags_pending = self._tags_pending, []
        for future in pending:
            error = future.exception()
            if error is not None and not isinstance(error, Exception):
                raise error
            if error is not None:
                log.warning("tagging launched instances with their NodeClaims failed: %s", error)

    def _prepare_templates(self, plans: Sequence[LaunchPlan]) -> None:
        """Each launch template the plans use ensured once, before their groups launch side by side (each would
        otherwise create the same ones, spending EC2's mutating tokens). A failure is left to the group's own
        ensure, which meets it again and reports it as before; a dying invocation dies."""
        configs = {config.name: config for plan in plans for config, _ in plan.templates}
        with ThreadPoolExecutor(max_workers=max(1, min(FLEET_THREADS, len(configs)))) as pool:
            for future in [pool.submit(self._templates.ensure, config) for config in configs.values()]:
                error = future.exception()
                if error is not None and not isinstance(error, Exception):
                    raise error

    def tagged(self, names: Sequence[str]) -> dict[str, Instance]:
        """NodeClaim name -> its live instance, for the names that have one."""
        if not names:
            return {}
        cluster_name = self._cluster.describe().name
        found: dict[str, Instance] = {}
        for start in range(0, len(names), FILTER_VALUES):
            extra = [{"Name": f"tag:{wk.TAG_NODECLAIM}", "Values": list(names[start : start + FILTER_VALUES])}]
            found.update({i.tags[wk.TAG_NODECLAIM]: i for i in self._instances.owned(cluster_name, extra)})
        return found

    def _tag_nodeclaims(self, plans: Sequence[LaunchPlan], ids: Sequence[str]) -> None:
        """Tag each new instance with its NodeClaim's name, beside the rest of the launch (``settle``). A merged
        call's ClientToken covers only a retry of the very same call; the tag also covers a retry whose group or
        request differs (a NodeClaim whose status write failed, offerings marked unavailable since). An instance
        whose launch is cut short before both its status and its tag is collected as leaked."""
        pairs = zip(plans, ids, strict=False)  # fewer ids than plans when EC2 launched fewer
        wanted = {iid: {wk.TAG_NODECLAIM: plan.nodeclaim.name} for plan, iid in pairs if plan.nodeclaim.name}
        for iid, error in self._instances.tag_each(wanted).items():
            log.warning("could not tag %s for NodeClaim %s: %s", iid, wanted[iid][wk.TAG_NODECLAIM], error)

    def _mark_unavailable(self, offerings: Sequence[OfferingKey]) -> None:
        """Best effort: the instances launched are the call's result whether or not the shared cache took the
        marks (a launch that fails here would leave them without NodeClaims); unmarked, the next fleet meets the
        same capacity error and marks them then."""
        for offering in offerings:
            try:
                self._unavailable.mark_unavailable(offering, "CreateFleet capacity error")
            except (CloudProviderError, ClientError) as error:
                log.warning("could not mark %s unavailable: %s", offering, error)

    def _create_fleet(self, plans: Sequence[LaunchPlan]) -> dict[str, Any] | CreateError:
        """CreateFleet for ``plans``, recreating launch templates deleted behind our back once. A ClientToken that an
        earlier, different request used (a pass cut short before it tagged what it launched, offerings marked
        unavailable since) is replaced once by one that also covers the request: EC2 would refuse it for ever."""
        first = plans[0]
        uids = [p.nodeclaim.metadata.uid or p.nodeclaim.name for p in plans]
        token, recreated, resalted = fleetrequest.client_token(uids), False, False
        while True:
            names = [(self._templates.ensure(config), overrides) for config, overrides in first.templates]
            request = fleetrequest.fleet_request(
                names,
                capacity_type=first.capacity_type,
                count=len(plans),
                tags=first.tags,
                token=token,
                context=first.context,
                prioritized=first.prioritized,
            )
            try:
                return self._instances.create_fleet(request)
            except ClientError as error:
                code = error_code(error)
                if code in TEMPLATE_NOT_FOUND and not recreated:
                    recreated = True
                    for name, _ in names:
                        self._templates.forget(name)
                    continue
                if code == IDEMPOTENT_MISMATCH and not resalted:
                    resalted, token = True, fleetrequest.client_token(uids, request)
                    continue
                return CreateError(
                    f"CreateFleet: {code}: {error_message(error)}", reason=code.replace(".", "") or "LaunchFailed"
                )

    def _launch_group(self, plans: Sequence[LaunchPlan]) -> list[Instance | CloudProviderError]:
        first = plans[0]
        response = self._create_fleet(plans)
        if isinstance(response, CreateError):
            return [response] * len(plans)
        errors = response.get("Errors", [])
        ids = sorted(fleetrequest.launched_ids(response))[: len(plans)]  # plans of one shape take any of them
        with self._pending_lock:
            self._tags_pending.append(self._tagging.submit(self._tag_nodeclaims, plans, ids))
        failed = fleetrequest.capacity_failures(
            errors, first.capacity_type, first.zone_of_subnet, first.placement_group, list(first.instance_types)
        )
        if first.reservation is not None and self._reservations is not None:
            # Karpenter's bookkeeping: a launch uses one of the reservation's instances, a capacity error means it
            # is full (its offering unavailable until it is described again), never an ICE mark of the type.
            for _ in ids:
                self._reservations.mark_launched(first.reservation.id)
            if failed:
                self._reservations.mark_unavailable(first.reservation.id)
        else:
            self._mark_unavailable(failed)
        launched = self._instances.describe(ids)
        outcomes: list[Instance | CloudProviderError] = [
            launched[iid] if iid in launched else TransientCloudError(f"{iid} is not visible yet") for iid in ids
        ]
        summary = fleetrequest.error_summary(errors)
        while len(outcomes) < len(plans):
            if failed or not errors:
                outcomes.append(InsufficientCapacityError(summary, failed))
            else:
                outcomes.append(CreateError(summary))
        if errors:
            log.info("CreateFleet errors: %s", summary)
        return outcomes
