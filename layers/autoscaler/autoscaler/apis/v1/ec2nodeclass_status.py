"""What the nodeclass function resolves for an EC2NodeClass: subnets, security groups, AMIs, capacity
reservations and the instance profile, with the class's conditions."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from autoscaler.apis.rules import ATOMIC_LIST, LenientModel
from autoscaler.apis.v1.common import NodeClassConditions, Timestamp


class SubnetStatus(LenientModel):
    id: str
    zone: str
    zone_id: str | None = Field(default=None, alias="zoneID")


class SecurityGroupStatus(LenientModel):
    id: str
    name: str | None = None


class AMIRequirement(LenientModel):
    key: str
    operator: str
    values: Annotated[list[str], ATOMIC_LIST] | None = None


class AMIStatus(LenientModel):
    id: str
    name: str | None = None
    requirements: list[AMIRequirement]
    # True when EC2 marks the image deprecated; Karpenter keeps using it until a newer one resolves.
    deprecated: bool | None = None


class CapacityReservationStatus(LenientModel):
    """A capacity reservation the class's selector terms resolved, as Karpenter reports it."""

    availability_zone: str = Field(alias="availabilityZone")
    end_time: Timestamp | None = Field(default=None, alias="endTime")
    id: Annotated[str, Field(pattern=r"^cr-[0-9a-z]+$")]
    instance_match_criteria: Literal["open", "targeted"] = Field(alias="instanceMatchCriteria")
    instance_type: str = Field(alias="instanceType")
    interruptible: bool | None = None
    owner_id: Annotated[str, Field(pattern=r"^[0-9]{12}$")] = Field(alias="ownerID")
    reservation_type: Literal["default", "capacity-block"] = Field(default="default", alias="reservationType")
    state: Literal["active", "expiring"] = "active"


class EC2NodeClassStatus(LenientModel):
    subnets: list[SubnetStatus] | None = None
    security_groups: list[SecurityGroupStatus] | None = Field(default=None, alias="securityGroups")
    capacity_reservations: list[CapacityReservationStatus] | None = Field(default=None, alias="capacityReservations")
    amis: list[AMIStatus] | None = None
    instance_profile: str | None = Field(default=None, alias="instanceProfile")
    conditions: NodeClassConditions | None = None
