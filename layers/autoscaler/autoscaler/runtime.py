"""The composition root (after Karpenter-AWS's operator): what a Lambda handler needs from its execution
environment, built once per container so that warm invocations reuse clients, caches and connections.

- :func:`aws_adapters`: every AWS adapter, built once into one typed bundle (``providers.aws.adapters``).
- :class:`Runtime`: the adapters behind the ports the controllers take (the Kubernetes cluster, the cloud
  provider, shared state, queues), and :attr:`Runtime.controllers`, the one registry of controllers built
  over them. Handlers take a controller from it; they never build an adapter or a provider themselves.

Handlers call :func:`current` inside the invocation (never at import, so a cold start that fails to reach the
cluster fails that invocation with a clear error, and the next one tries again). Tests and local runs
:func:`install` a runtime of their own: :meth:`Runtime.build` with their settings (``instance_types`` narrows
the catalogue) and clock, or one over in-memory doubles of the ports.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from typing import Protocol

from autoscaler.clock import utc_now
from autoscaler.cloudprovider.lease import InMemoryLeases, Leases
from autoscaler.cloudprovider.nodeclass import NodeClassResolver
from autoscaler.cloudprovider.owned import OwnedInstanceProfiles, OwnedLaunchTemplates
from autoscaler.cloudprovider.port import CloudProvider, UnavailableOfferings
from autoscaler.cloudprovider.repair import RepairPolicy
from autoscaler.cloudprovider.unavailable import InMemoryUnavailableOfferings
from autoscaler.cloudprovider.zonalshift import NoZonalShifts, ZonalShifts
from autoscaler.controllers.batch_skip import InMemoryLastPass, LastPassStore, QueuedPasses
from autoscaler.controllers.disruption import DisruptionCloud, DisruptionController
from autoscaler.controllers.disruption.verification import PlacementCheck, check_placements
from autoscaler.controllers.garbage_collection import GarbageCollector
from autoscaler.controllers.interruption import DeadLetters, InterruptionController
from autoscaler.controllers.nodeclass import NodeClassController
from autoscaler.controllers.provisioner_pass import PassCloud, ProvisionerPass
from autoscaler.controllers.state import NodeClassIndex
from autoscaler.controllers.termination import TerminationController
from autoscaler.events import SqsRecord
from autoscaler.kube.connect import cluster_from_environment
from autoscaler.kube.port import Cluster
from autoscaler.providers.aws.adapters import AWSAdapters
from autoscaler.providers.aws.amis import AMIResolver
from autoscaler.providers.aws.capacityreservations import CapacityReservations
from autoscaler.providers.aws.catalog import InstanceTypeCatalog
from autoscaler.providers.aws.clients import AWSClients
from autoscaler.providers.aws.cluster import ClusterDescriber
from autoscaler.providers.aws.deadletters import SqsDeadLetters, SqsVisibility
from autoscaler.providers.aws.instanceprofiles import InstanceProfiles
from autoscaler.providers.aws.instances import Instances
from autoscaler.providers.aws.lastpass import DynamoDBLastPass
from autoscaler.providers.aws.launcher import Launcher
from autoscaler.providers.aws.launchtemplates import LaunchTemplates
from autoscaler.providers.aws.leases import DynamoDBLeases
from autoscaler.providers.aws.network import NetworkResolver
from autoscaler.providers.aws.nodeclass_resolver import AWSNodeClassResolver
from autoscaler.providers.aws.placementgroups import PlacementGroups
from autoscaler.providers.aws.pricing import Pricing
from autoscaler.providers.aws.provider import AWSCloudProvider, NodeClassLookup
from autoscaler.providers.aws.repair_policies import REPAIR_POLICIES
from autoscaler.providers.aws.unavailable import DynamoDBUnavailableOfferings
from autoscaler.providers.aws.zonalshift import ArcZonalShifts
from autoscaler.settings import Settings

Clock = Callable[[], datetime]


class Cloud(CloudProvider, PassCloud, DisruptionCloud, Protocol):
    """What the controllers ask of the cloud, together: the CloudProvider port and its batch forms."""


class Redelivery(Protocol):
    def release(self, records: Sequence[SqsRecord]) -> None:
        """Make received messages visible on their queue again now. Never raises: it only saves time."""
        ...


def aws_adapters(settings: Settings, *, clients: AWSClients | None = None, clock: Clock = utc_now) -> AWSAdapters:
    """Every AWS adapter for ``settings``, built once. Without STATE_TABLE_NAME (a local run) the unavailable
    offerings and leases are kept in memory, which only serializes passes within this process, and there is no
    record of the provisioner's last pass. ``clients`` reuses connections (and hooks) the caller has."""
    clients = clients or AWSClients(settings.region)
    table, dlq, region = settings.state_table_name, settings.interruption_dlq_url, settings.region
    unavailable = DynamoDBUnavailableOfferings(clients, table, clock) if table else InMemoryUnavailableOfferings(clock)
    pricing = Pricing(clients, region, settings.isolated_vpc, clock, settings.instance_types)
    catalog = InstanceTypeCatalog(
        clients,
        pricing,
        region,
        vm_memory_overhead_percent=settings.vm_memory_overhead_percent,
        reserved_enis=settings.reserved_enis,
        instance_type_names=settings.instance_types,
        clock=clock,
    )
    cluster = ClusterDescriber(clients, settings.cluster_name, settings.cluster_endpoint, clock)
    network = NetworkResolver(clients, clock)
    amis = AMIResolver(clients, clock)
    launch_templates = LaunchTemplates(clients, settings.cluster_name, clock)
    placement_groups = PlacementGroups(clients, clock)
    instance_profiles = InstanceProfiles(clients, region, settings.cluster_name)
    instances = Instances(clients)
    reservations = CapacityReservations(clients, clock)
    zonal_shifts: ZonalShifts = (
        ArcZonalShifts(clients, lambda: cluster.describe().arn or "", clock)
        if settings.enable_zonal_shift
        else NoZonalShifts()
    )
    return AWSAdapters(
        clients=clients,
        pricing=pricing,
        catalog=catalog,
        cluster=cluster,
        network=network,
        amis=amis,
        launch_templates=launch_templates,
        instance_profiles=instance_profiles,
        instances=instances,
        placement_groups=placement_groups,
        reservations=reservations,
        launcher=Launcher(
            cluster,
            network,
            launch_templates,
            instances,
            unavailable,
            reservations=reservations,
            open_reservations=not settings.feature_gates.reserved_capacity,
        ),
        resolver=AWSNodeClassResolver(
            cluster,
            network,
            amis,
            instance_profiles,
            launch_templates,
            placement_groups=placement_groups,
            reservations=reservations,
        ),
        unavailable=unavailable,
        leases=DynamoDBLeases(clients, table, clock) if table else InMemoryLeases(clock),
        last_pass=DynamoDBLastPass(clients, table) if table else None,
        dead_letters=SqsDeadLetters(clients, dlq) if dlq else None,
        visibility=SqsVisibility(clients),
        zonal_shifts=zonal_shifts,
    )


def cloud_provider(
    settings: Settings, nodeclasses: NodeClassLookup, *, clients: AWSClients | None = None, clock: Clock = utc_now
) -> AWSCloudProvider:
    """A cloud provider over adapters of its own, for commands and tests that need no whole runtime."""
    return AWSCloudProvider(settings, aws_adapters(settings, clients=clients, clock=clock), nodeclasses, clock=clock)


@dataclass(frozen=True, eq=False)  # a runtime is one container's adapters: compared and hashed by identity
class Runtime:
    settings: Settings
    clock: Clock
    cluster: Cluster
    cloud: Cloud  # reads EC2NodeClasses from ``nodeclasses``
    nodeclasses: NodeClassIndex  # the classes the last pass read: filled by the passes that read them
    nodeclass_resolver: NodeClassResolver
    launch_templates: OwnedLaunchTemplates
    instance_profiles: OwnedInstanceProfiles
    unavailable: UnavailableOfferings
    leases: Leases
    last_pass: LastPassStore
    redelivery: Redelivery
    dead_letters: DeadLetters | None  # the interruption queue's DLQ, when INTERRUPTION_DLQ_URL is set
    # Every consolidation command's placements pass these before it starts (the embedded world adds its own).
    placement_checks: tuple[PlacementCheck, ...] = (check_placements,)

    @classmethod
    def build(
        cls,
        settings: Settings | None = None,
        *,
        clock: Clock = utc_now,
        cluster: Cluster | None = None,
        clients: AWSClients | None = None,
        placement_checks: tuple[PlacementCheck, ...] = (check_placements,),
    ) -> Runtime:
        """The real adapters, for ``settings`` (from the environment by default). ``cluster`` and ``clients``
        replace the connections that would be made (the Kubernetes adapter ``kube.connect`` finds, the boto3
        clients): callers that hold them already, or want them tuned, pass their own.

        The cloud provider reads EC2NodeClasses only from the pass that read the cluster (:attr:`nodeclasses`):
        a function that runs no such pass (termination, garbage collection) asks only whether instances exist,
        and gets them without instance-type details, so it needs neither the classes nor DescribeInstanceTypes."""
        settings = settings or Settings.from_env()
        aws = aws_adapters(settings, clients=clients, clock=clock)
        nodeclasses = NodeClassIndex()
        return cls(
            settings=settings,
            clock=clock,
            cluster=cluster or cluster_from_environment(settings, now=clock),
            cloud=AWSCloudProvider(settings, aws, nodeclasses.get, clock=clock),
            nodeclasses=nodeclasses,
            nodeclass_resolver=aws.resolver,
            launch_templates=aws.launch_templates,
            instance_profiles=aws.instance_profiles,
            unavailable=aws.unavailable,
            leases=aws.leases,
            last_pass=aws.last_pass or InMemoryLastPass(),
            redelivery=aws.visibility,
            dead_letters=aws.dead_letters,
            placement_checks=placement_checks,
        )

    @cached_property
    def controllers(self) -> Controllers:
        return Controllers(self)


class Controllers:
    """The controllers of one runtime, each built on first use and kept: a warm container's later invocations
    reuse them, and their caches and workers with them. Tests may set one before its first use."""

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime

    @cached_property
    def provisioning_pass(self) -> ProvisionerPass:
        rt = self._runtime
        return ProvisionerPass(
            rt.cluster,
            rt.cloud,
            rt.unavailable,
            nodeclasses=rt.nodeclasses,
            clock=rt.clock,
            feature_gates=rt.settings.feature_gates,
        )

    @cached_property
    def provisioner(self) -> QueuedPasses:
        """The provisioning pass behind the FIFO skip rule: what a batch of the provisioning queue runs."""
        return QueuedPasses(self.provisioning_pass, self._runtime.last_pass, self._runtime.leases)

    @cached_property
    def disruption(self) -> DisruptionController:
        rt = self._runtime
        return DisruptionController(
            rt.cluster,
            rt.cloud,
            rt.unavailable,
            clock=rt.clock,
            leases=rt.leases,
            nodeclasses=rt.nodeclasses,
            spot_to_spot=rt.settings.spot_to_spot_consolidation,
            placement_checks=rt.placement_checks,
            capacity_buffers=rt.settings.feature_gates.capacity_buffer,
            repair_policies=repair_policies(rt.settings),
            node_overlays=rt.settings.feature_gates.node_overlay,
        )

    @cached_property
    def termination(self) -> TerminationController:
        return TerminationController(self._runtime.cluster, self._runtime.cloud, clock=self._runtime.clock)

    @cached_property
    def garbage_collection(self) -> GarbageCollector:
        rt = self._runtime
        return GarbageCollector(
            rt.cluster, rt.cloud, rt.launch_templates, rt.instance_profiles, rt.leases, clock=rt.clock
        )

    @cached_property
    def nodeclass(self) -> NodeClassController:
        rt = self._runtime
        return NodeClassController(
            rt.cluster,
            rt.nodeclass_resolver,
            clock=rt.clock,
            reserved_capacity=rt.settings.feature_gates.reserved_capacity,
        )

    @cached_property
    def interruption(self) -> InterruptionController:
        rt = self._runtime
        return InterruptionController(
            rt.cluster, rt.unavailable, rt.dead_letters, clock=rt.clock,
            max_receives=rt.settings.interruption_max_receives,
        )  # fmt: skip


class _Container:
    runtime: Runtime | None = None


_container = _Container()


def current() -> Runtime:
    """This container's runtime, built on first use from the environment."""
    if _container.runtime is None:
        _container.runtime = Runtime.build()
    return _container.runtime


def install(runtime: Runtime | None) -> None:
    """Use ``runtime`` from now on (tests, local runs); None builds the real one again on next use."""
    _container.runtime = runtime


# --- node repair (NodeRepair gate) ---------------------------------------------------------------------------
def repair_policies(settings: Settings) -> tuple[RepairPolicy, ...]:
    """The AWS provider's repair policies when the NodeRepair gate is on; none (no repair) otherwise."""
    return REPAIR_POLICIES if settings.feature_gates.node_repair else ()
