"""Instance profiles for EC2NodeClasses that name a ``role``: created idempotently, tagged as this
cluster's, their role swapped when the class's role changes, deleted with the class."""

from __future__ import annotations

from typing import TYPE_CHECKING

from botocore.exceptions import ClientError

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.ec2nodeclass import EC2NodeClass
from autoscaler.apis.v1.hashing import stable_hash
from autoscaler.providers.aws.clients import error_code, is_not_found, transient_errors
from autoscaler.providers.aws.userdata.options import ClusterInfo

if TYPE_CHECKING:
    from autoscaler.providers.aws.clients import AWSClients


def instance_profile_name(cluster_name: str, region: str, nodeclass_name: str) -> str:
    """``<cluster>_<hash of region and class name>``: stable per class, unique per cluster and region."""
    return f"{cluster_name}_{stable_hash(region + nodeclass_name)}"


class InstanceProfiles:
    def __init__(self, clients: AWSClients, region: str) -> None:
        self._clients, self._region = clients, region

    def name(self, cluster: ClusterInfo, nodeclass: EC2NodeClass) -> str:
        return instance_profile_name(cluster.name, self._region, nodeclass.name)

    def tags(self, cluster: ClusterInfo, nodeclass: EC2NodeClass) -> dict[str, str]:
        return {
            f"{wk.TAG_CLUSTER_PREFIX}{cluster.name}": "owned",
            wk.TAG_CLUSTER_NAME: cluster.name,
            wk.TAG_CLUSTER_ARN: cluster.arn,
            wk.TAG_NODECLASS: nodeclass.name,
            wk.TAG_REGION: self._region,
        }

    def ensure(self, cluster: ClusterInfo, nodeclass: EC2NodeClass) -> str:
        """Create the class's profile if missing and make ``spec.role`` its only role; return its name."""
        role = nodeclass.spec.role
        if not role:
            raise ValueError(f"EC2NodeClass {nodeclass.name} names an instanceProfile, not a role")
        iam, name = self._clients.iam, self.name(cluster, nodeclass)
        tags = [{"Key": k, "Value": v} for k, v in sorted(self.tags(cluster, nodeclass).items())]
        with transient_errors("ensuring the instance profile"):
            try:
                profile = iam.get_instance_profile(InstanceProfileName=name)["InstanceProfile"]
            except ClientError as error:
                if not is_not_found(error):
                    raise
                try:
                    profile = iam.create_instance_profile(InstanceProfileName=name, Tags=tags)["InstanceProfile"]  # type: ignore[arg-type]
                except ClientError as race:
                    if error_code(race) != "EntityAlreadyExists":
                        raise
                    profile = iam.get_instance_profile(InstanceProfileName=name)["InstanceProfile"]
            if not any(t["Key"] == wk.TAG_CLUSTER_NAME for t in profile.get("Tags", [])):
                iam.tag_instance_profile(InstanceProfileName=name, Tags=tags)  # type: ignore[arg-type]
            roles = [r["RoleName"] for r in profile.get("Roles", [])]
            if roles == [role]:
                return name
            for old in roles:  # a profile holds at most one role
                iam.remove_role_from_instance_profile(InstanceProfileName=name, RoleName=old)
            iam.add_role_to_instance_profile(InstanceProfileName=name, RoleName=role)
        return name

    def delete(self, cluster: ClusterInfo, nodeclass: EC2NodeClass) -> None:
        """Remove the class's profile (and its role from it); nothing to do when it is already gone."""
        iam, name = self._clients.iam, self.name(cluster, nodeclass)
        with transient_errors("deleting the instance profile"):
            try:
                profile = iam.get_instance_profile(InstanceProfileName=name)["InstanceProfile"]
                for role in profile.get("Roles", []):
                    iam.remove_role_from_instance_profile(InstanceProfileName=name, RoleName=role["RoleName"])
                iam.delete_instance_profile(InstanceProfileName=name)
            except ClientError as error:
                if not is_not_found(error):
                    raise
