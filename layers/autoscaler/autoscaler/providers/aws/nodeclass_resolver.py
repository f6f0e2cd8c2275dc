"""The NodeClassResolver port over EC2, SSM, EKS and IAM."""

from __future__ import annotations

import json

from botocore.exceptions import ClientError

from autoscaler.apis.v1.ec2nodeclass import AMIStatus, EC2NodeClass, SecurityGroupStatus, SubnetStatus
from autoscaler.cloudprovider.nodeclass import NothingMatchedError, ResolutionRefusedError
from autoscaler.providers.aws.amis import AMIResolver, NoAMIsError
from autoscaler.providers.aws.clients import error_code, error_message
from autoscaler.providers.aws.cluster import ClusterDescriber
from autoscaler.providers.aws.instanceprofiles import InstanceProfiles
from autoscaler.providers.aws.launchtemplates import LaunchTemplates
from autoscaler.providers.aws.network import NetworkResolver


def _terms(terms: list[dict[str, object]]) -> str:
    return json.dumps(terms, sort_keys=True)


class AWSNodeClassResolver:
    def __init__(
        self,
        cluster: ClusterDescriber,
        network: NetworkResolver,
        amis: AMIResolver,
        profiles: InstanceProfiles,
        launch_templates: LaunchTemplates,
    ) -> None:
        self._cluster, self._network, self._amis = cluster, network, amis
        self._profiles, self._templates = profiles, launch_templates

    def subnets(self, nodeclass: EC2NodeClass) -> list[SubnetStatus]:
        found = self._network.subnets(nodeclass.spec.subnet_selector_terms)
        if not found:
            terms = [t.to_dict() for t in nodeclass.spec.subnet_selector_terms]
            raise NothingMatchedError(f"no subnet matched subnetSelectorTerms {_terms(terms)}")
        return found

    def security_groups(self, nodeclass: EC2NodeClass) -> list[SecurityGroupStatus]:
        found = self._network.security_groups(nodeclass.spec.security_group_selector_terms)
        if not found:
            terms = [t.to_dict() for t in nodeclass.spec.security_group_selector_terms]
            raise NothingMatchedError(f"no security group matched securityGroupSelectorTerms {_terms(terms)}")
        return found

    def amis(self, nodeclass: EC2NodeClass) -> list[AMIStatus]:
        try:
            return self._amis.resolve(nodeclass, self._cluster.describe().kubernetes_version)
        except NoAMIsError as error:
            raise NothingMatchedError(str(error)) from error

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

    def cleanup(self, nodeclass: EC2NodeClass) -> None:
        if nodeclass.spec.role:
            self._profiles.delete(self._cluster.describe(), nodeclass)
        self._templates.delete_for(nodeclass.name)
