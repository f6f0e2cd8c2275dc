"""Ports for the cloud resources a cluster owns besides its instances: launch templates and instance profiles,
as garbage collection lists and deletes them. Pure.

Implementations return only resources carrying this cluster's ownership tags, whatever their names, and never
delete anything else: a shared account holds other clusters' resources under look-alike names."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol


@dataclass(frozen=True)
class OwnedLaunchTemplate:
    id: str
    name: str
    nodeclass: str  # its karpenter.k8s.aws/ec2nodeclass tag
    image_id: str | None  # the AMI its latest version launches; None when it could not be read
    created_at: datetime | None


@dataclass(frozen=True)
class OwnedInstanceProfile:
    name: str
    nodeclass: str  # its karpenter.k8s.aws/ec2nodeclass tag
    created_at: datetime | None
    roles: tuple[str, ...] = ()


class OwnedLaunchTemplates(Protocol):
    def list_owned(self) -> list[OwnedLaunchTemplate]:
        """This cluster's launch templates (tagged with its name and its ownership tag). Raises TransientCloudError."""
        ...

    def delete_owned(self, template: OwnedLaunchTemplate) -> bool:
        """Delete it; False when it was already gone. Raises TransientCloudError."""
        ...


class OwnedInstanceProfiles(Protocol):
    def list_owned(self) -> list[OwnedInstanceProfile]:
        """This cluster's instance profiles in this region (ownership, region and EC2NodeClass tags).
        Raises TransientCloudError."""
        ...

    def delete_owned(self, profile: OwnedInstanceProfile) -> bool:
        """Remove its role and delete it; False when it was already gone. Raises TransientCloudError."""
        ...
