"""Instance profiles for EC2NodeClasses that name a ``role``: created idempotently, tagged as this
cluster's, their role swapped when the class's role changes, deleted with the class; listed and deleted by
garbage collection (the OwnedInstanceProfiles port), which only ever sees profiles tagged as this cluster's."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from botocore.exceptions import ClientError

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.ec2nodeclass import EC2NodeClass
from autoscaler.apis.v1.hashing import stable_hash
from autoscaler.cloudprovider.owned import OwnedInstanceProfile
from autoscaler.providers.aws.clients import error_code, is_not_found, transient_errors
from autoscaler.providers.aws.userdata.options import ClusterInfo

if TYPE_CHECKING:
    from autoscaler.providers.aws.clients import AWSClients

log = logging.getLogger(__name__)


def instance_profile_name(cluster_name: str, region: str, nodeclass_name: str) -> str:
    """``<cluster>_<hash of region and class name>``: stable per class, unique per cluster and region."""
    return f"{cluster_name}_{stable_hash(region + nodeclass_name)}"


class InstanceProfiles:
    def __init__(self, clients: AWSClients, region: str, cluster_name: str = "") -> None:
        self._clients, self._region, self._cluster_name = clients, region, cluster_name

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
        self._delete(self.name(cluster, nodeclass))

    def _delete(self, name: str) -> bool:
        iam = self._clients.iam
        with transient_errors("deleting the instance profile"):
            try:
                profile = iam.get_instance_profile(InstanceProfileName=name)["InstanceProfile"]
                for role in profile.get("Roles", []):
                    iam.remove_role_from_instance_profile(InstanceProfileName=name, RoleName=role["RoleName"])
                iam.delete_instance_profile(InstanceProfileName=name)
            except ClientError as error:
                if not is_not_found(error):
                    raise
                return False
        return True

    # --- the OwnedInstanceProfiles port (garbage collection) ---------------------------------------------
    def list_owned(self) -> list[OwnedInstanceProfile]:
        """Profiles named like ours are only candidates (ListInstanceProfiles returns no tags): each is read
        with GetInstanceProfile and kept only when its tags say this cluster made it in this region, as the
        IAM policy's delete condition requires."""
        if not self._cluster_name:
            raise ValueError("InstanceProfiles needs the cluster name to list the cluster's profiles")
        iam, prefix, owned = self._clients.iam, f"{self._cluster_name}_", []
        with transient_errors("listing instance profiles"):
            names = [
                p["InstanceProfileName"]
                for page in iam.get_paginator("list_instance_profiles").paginate()
                for p in page.get("InstanceProfiles", [])
                if p["InstanceProfileName"].startswith(prefix)
            ]
            for name in names:
                try:
                    profile = iam.get_instance_profile(InstanceProfileName=name)["InstanceProfile"]
                except ClientError as error:
                    if is_not_found(error):
                        continue
                    raise
                tags = {t["Key"]: t["Value"] for t in profile.get("Tags", [])}
                if not self._is_owned(tags):
                    continue
                owned.append(
                    OwnedInstanceProfile(
                        name=name,
                        nodeclass=tags[wk.TAG_NODECLASS],
                        created_at=profile.get("CreateDate"),
                        roles=tuple(r["RoleName"] for r in profile.get("Roles", [])),
                    )
                )
        return owned

    def _is_owned(self, tags: dict[str, str]) -> bool:
        return (
            tags.get(f"{wk.TAG_CLUSTER_PREFIX}{self._cluster_name}") == "owned"
            and tags.get(wk.TAG_REGION) == self._region
            and bool(tags.get(wk.TAG_NODECLASS))
        )

    def delete_owned(self, profile: OwnedInstanceProfile) -> bool:
        deleted = self._delete(profile.name)
        if deleted:
            log.info("deleted instance profile %s of EC2NodeClass %s", profile.name, profile.nodeclass)
        return deleted
