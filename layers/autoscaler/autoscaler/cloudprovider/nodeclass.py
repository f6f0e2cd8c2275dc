"""The NodeClassResolver port: what the nodeclass controller asks of the cloud to fill an EC2NodeClass's
status and to clean up after it. ``providers.aws`` implements it; tests use fakes."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Protocol

from autoscaler.apis.rules import ApiModel
from autoscaler.apis.v1.ec2nodeclass import (
    AMIStatus,
    CapacityReservationStatus,
    EC2NodeClass,
    SecurityGroupStatus,
    SubnetStatus,
)


class NothingMatchedError(LookupError):
    """A selector matched nothing. The message says what was looked for, for the condition's message."""

    @classmethod
    def for_terms(cls, what: str, field: str, terms: Iterable[ApiModel]) -> NothingMatchedError:
        """``no <what> matched <field> <the terms as JSON>``: the one wording for selector terms."""
        return cls(f"no {what} matched {field} {json.dumps([t.to_dict() for t in terms], sort_keys=True)}")


class ResolutionRefusedError(Exception):
    """The cloud refused a resolution for a reason a person must fix (access denied, invalid role, ...).
    The message carries the cloud's words."""


class NodeClassResolver(Protocol):
    def subnets(self, nodeclass: EC2NodeClass) -> list[SubnetStatus]:
        """Subnets the class selects (most free IPs first). Raises NothingMatchedError, TransientCloudError."""
        ...

    def security_groups(self, nodeclass: EC2NodeClass) -> list[SecurityGroupStatus]:
        """Security groups the class selects. Raises NothingMatchedError, TransientCloudError."""
        ...

    def amis(self, nodeclass: EC2NodeClass) -> list[AMIStatus]:
        """The class's AMIs, newest first, one per requirement set. Raises NothingMatchedError."""
        ...

    def instance_profile(self, nodeclass: EC2NodeClass) -> str:
        """The instance profile nodes of the class get: ``spec.instanceProfile``, or the one ensured for
        ``spec.role`` (created, tagged, role swapped as needed). Raises ResolutionRefusedError when IAM
        refuses (no such role, access denied), TransientCloudError."""
        ...

    def placement_group(self, nodeclass: EC2NodeClass) -> str | None:
        """The id of the placement group ``spec.placementGroupSelector`` selects (None without a selector).
        Raises NothingMatchedError when no available group matches, ResolutionRefusedError when the cloud refuses
        the lookup, TransientCloudError."""
        ...

    def capacity_reservations(self, nodeclass: EC2NodeClass) -> list[CapacityReservationStatus]:
        """Active reservations ``spec.capacityReservationSelectorTerms`` selects, by id ([] without terms; a
        capacity block within its lead time of the end is ``expiring``). Raises ResolutionRefusedError when EC2
        refuses, TransientCloudError."""
        ...

    def cleanup(self, nodeclass: EC2NodeClass) -> None:
        """Delete what the class owns in the cloud (its instance profile when it has a role, its launch
        templates). Idempotent: already-deleted resources are not an error."""
        ...
