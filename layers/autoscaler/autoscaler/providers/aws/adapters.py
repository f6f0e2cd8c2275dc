"""The AWS adapters of one container, in one typed bundle (after Karpenter-AWS's operator).

``autoscaler.runtime`` is the composition root that builds it, once per container: the cloud provider
receives it instead of building its collaborators itself, and the runtime hands the same adapters (launch
templates, instance profiles, the EC2NodeClass resolver, shared state, queues) to the controllers that need
them directly. One bundle means one cache of each kind per container: one catalog, one price list, one AMI
cache, however many controllers use them.
"""

from __future__ import annotations

from dataclasses import dataclass

from autoscaler.cloudprovider.lease import Leases
from autoscaler.cloudprovider.port import UnavailableOfferings
from autoscaler.cloudprovider.zonalshift import ZonalShifts
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
from autoscaler.providers.aws.network import NetworkResolver
from autoscaler.providers.aws.nodeclass_resolver import AWSNodeClassResolver
from autoscaler.providers.aws.placementgroups import PlacementGroups
from autoscaler.providers.aws.pricing import Pricing


@dataclass(frozen=True)
class AWSAdapters:
    clients: AWSClients
    pricing: Pricing
    catalog: InstanceTypeCatalog  # instance types, priced; narrowed by Settings.instance_types
    cluster: ClusterDescriber  # the EKS cluster: endpoint, CA, service CIDR, version
    network: NetworkResolver  # subnets and security groups
    amis: AMIResolver
    launch_templates: LaunchTemplates
    instance_profiles: InstanceProfiles
    instances: Instances  # describe, tag, terminate
    placement_groups: PlacementGroups  # the group a class selects (spec.placementGroupSelector)
    reservations: CapacityReservations  # the capacity reservations classes select, and their free instances
    launcher: Launcher  # CreateFleet with the launch templates
    resolver: AWSNodeClassResolver  # EC2NodeClass status: subnets, security groups, AMIs, instance profile
    unavailable: UnavailableOfferings  # in the state table, or in memory without one
    leases: Leases  # likewise
    last_pass: DynamoDBLastPass | None  # the provisioner's last pass; None without a state table
    dead_letters: SqsDeadLetters | None  # the interruption queue's DLQ; None without INTERRUPTION_DLQ_URL
    visibility: SqsVisibility  # hands received messages back to their queue at once
    zonal_shifts: ZonalShifts  # zones ARC shifts the cluster away from (none without ENABLE_ZONAL_SHIFT)
