"""The NodeClassResolver port over EC2, SSM, EKS and IAM."""

from __future__ import annotations

from botocore.exceptions import ClientError

from autoscaler.apis.v1.ec2nodeclass import (
    AMIStatus,
    CapacityReservationStatus,
    EC2NodeClass,
    SecurityGroupStatus,
    SubnetStatus,
)
from autoscaler.cloudprovider.errors import NodeClassNotReadyError
from autoscaler.cloudprovider.nodeclass import NothingMatchedError, ResolutionRefusedError
from autoscaler.providers.aws.amis import AMIResolver
from autoscaler.providers.aws.capacityreservations import CapacityReservations
from autoscaler.providers.aws.clients import error_code, error_message
from autoscaler.providers.aws.cluster import ClusterDescriber
from autoscaler.providers.aws.instanceprofiles import InstanceProfiles
from autoscaler.providers.aws.launchtemplates import LaunchTemplates
from autoscaler.providers.aws.network import NetworkResolver
from autoscaler.providers.aws.placementgroups import PlacementGroups


class AWSNodeClassResolver:
    def __init__(
        self,
        cluster: ClusterDescriber,
        network: NetworkResolver,
        amis: AMIResolver,
        profiles: InstanceProfiles,
        launch_templates: LaunchTemplates,
        *,
        placement_groups: PlacementGroups,
        reservations: CapacityReservations,
    ) -> None:
        self._cluster, self._network, self._amis = cluster, network, amis
        self._profiles, self._templates = profiles, launch_templates
        self._placement, self._reservations = placement_groups, reservations

    def subnets(self, nodeclass: EC2NodeClass) -> list[SubnetStatus]:
        terms = nodeclass.spec.subnet_selector_terms
        found = self._network.subnets(terms)
        if not found:
            raise NothingMatchedError.for_terms("subnet", "subnetSelectorTerms", terms)
        return found

    def security_groups(self, nodeclass: EC2NodeClass) -> list[SecurityGroupStatus]:
        terms = nodeclass.spec.security_group_selector_terms
        found = self._network.security_groups(terms)
        if not found:
            raise NothingMatchedError.for_terms("security group", "securityGroupSelectorTerms", terms)
        return found

    def amis(self, nodeclass: EC2NodeClass) -> list[AMIStatus]:
        return self._amis.resolve(nodeclass, self._cluster.describe().kubernetes_version)

    def instance_profile(self, nodeclass: EC2NodeClass) -> str:
        if nodeclass.spec.instance_profile:
            return nodeclass.spec.instance_profile
        try:
            return self._profiles.ensure(self._cluster.describe(), nodeclass)
        except ClientError as error:
            raise ResolutionRefusedError(
                f"IAM refused the instance profile for role {nodeclass.spec.role!r}: "
                f"{error_code(error)}: {error_message(error)}"
            ) from error

    def placement_group(self, nodeclass: EC2NodeClass) -> str | None:
        selector = nodeclass.spec.placement_group_selector
        try:
            group = self._placement.resolve(selector)
        except NodeClassNotReadyError as error:  # EC2 refused the lookup
            raise ResolutionRefusedError(str(error)) from error
        if selector is not None and group is None:
            raise NothingMatchedError(f"Placement group {selector.id or selector.name!r} not found")
        return group.id if group else None

    def capacity_reservations(self, nodeclass: EC2NodeClass) -> list[CapacityReservationStatus]:
        return self._reservations.statuses(nodeclass.spec.capacity_reservation_selector_terms or [])

    def cleanup(self, nodeclass: EC2NodeClass) -> None:
        if nodeclass.spec.role:
            self._profiles.delete(self._cluster.describe(), nodeclass)
        self._templates.delete_for(nodeclass.name)
