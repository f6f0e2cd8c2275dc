"""Reserved launches against the moto world over HTTP: a NodeClaim whose best offering is a reservation launches
into it through a template that targets it; the world counts the launch against the reservation and refuses one past
it with EC2's ReservationCapacityExceeded; the provider then marks the reservation unavailable and falls back."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.ec2nodeclass import CapacityReservationSelectorTerm, EC2NodeClass
from autoscaler.cloudprovider.errors import CreateError, InsufficientCapacityError
from autoscaler.providers.aws.clients import AWSClients
from autoscaler.providers.aws.ec2instance import instance_id
from autoscaler.providers.aws.provider import AWSCloudProvider
from autoscaler_dev.world.aws_world import AWSWorld
from tests.functional.aws.helpers import claim, instance, provider
from tests.functional.aws.test_launch import AMD64, recorded_fleets, template_data
from tests.support.iam_gates import gated, synthesized, without_resource

ZONE = "us-west-2a"
ANY_BUT_SPOT = (wk.LABEL_CAPACITY_TYPE, "In", [wk.CAPACITY_TYPE_RESERVED, wk.CAPACITY_TYPE_ON_DEMAND])
LARGE = (wk.LABEL_INSTANCE_TYPE, "In", ["m5.large", "m5.xlarge"])


def reserved_cloud(
    world: AWSWorld, count: int, clients: AWSClients | None = None
) -> tuple[AWSCloudProvider, EC2NodeClass, str]:
    rid = world.reserve("m5.large", ZONE, count, match_criteria="targeted")
    nodeclass = world.nodeclass("default")
    cloud = provider(world, nodeclass, clients=clients)
    term = CapacityReservationSelectorTerm.model_validate({"id": rid})
    nodeclass.status.capacity_reservations = cloud.aws.reservations.statuses([term])  # type: ignore[union-attr]
    return cloud, nodeclass, rid


def launched_into(world: AWSWorld, provider_id: str | None) -> Any:
    return instance(world, instance_id(provider_id)).get("CapacityReservationId")


def test_a_reserved_launch_targets_its_reservation_and_labels_the_node(aws_world: AWSWorld) -> None:
    cloud, _, rid = reserved_cloud(aws_world, 2)
    fleets = recorded_fleets(cloud)
    launched = cloud.create(claim("reserved-1", "default", ANY_BUT_SPOT, AMD64, LARGE))
    labels = launched.metadata.labels or {}
    assert labels[wk.LABEL_CAPACITY_TYPE] == wk.CAPACITY_TYPE_RESERVED
    assert (labels[wk.LABEL_INSTANCE_TYPE], labels[wk.LABEL_ZONE]) == ("m5.large", ZONE)
    assert labels[wk.LABEL_CAPACITY_RESERVATION_ID] == rid
    assert labels[wk.LABEL_CAPACITY_RESERVATION_TYPE] == "default"
    assert labels[wk.LABEL_CAPACITY_RESERVATION_INTERRUPTIBLE] == "false"
    (request,) = fleets
    assert request["TargetCapacitySpecification"]["DefaultTargetCapacityType"] == "on-demand"
    (config,) = request["LaunchTemplateConfigs"]
    assert [(o["InstanceType"], o["AvailabilityZone"]) for o in config["Overrides"]] == [("m5.large", ZONE)]
    data = template_data(aws_world, config["LaunchTemplateSpecification"]["LaunchTemplateName"])
    assert data["CapacityReservationSpecification"] == {
        "CapacityReservationPreference": "capacity-reservations-only",
        "CapacityReservationTarget": {"CapacityReservationId": rid},
    }
    assert launched_into(aws_world, launched.status.provider_id) == rid  # type: ignore[union-attr]
    assert cloud.aws.reservations.available(rid) == 1  # counted down by the launch


def test_launches_of_one_pass_past_the_reservation_fall_back_to_on_demand(aws_world: AWSWorld) -> None:
    cloud, _, rid = reserved_cloud(aws_world, 2)
    claims = [claim(f"burst-{i}", "default", ANY_BUT_SPOT, AMD64, LARGE) for i in range(4)]
    outcomes = cloud.create_many(claims)
    types = [(o.metadata.labels or {})[wk.LABEL_CAPACITY_TYPE] for o in outcomes]  # type: ignore[union-attr]
    assert sorted(types) == ["on-demand", "on-demand", "reserved", "reserved"]
    ec2 = aws_world.client("ec2")
    (described,) = ec2.describe_capacity_reservations(CapacityReservationIds=[rid])["CapacityReservations"]
    assert described["AvailableInstanceCount"] == 0


def test_a_full_reservation_is_refused_by_ec2_then_marked_unavailable_and_the_next_launch_falls_back(
    aws_world: AWSWorld,
) -> None:
    cloud, _, rid = reserved_cloud(aws_world, 1)
    assert cloud.aws.reservations.available(rid) == 1
    # Gone behind the provider's back: its availability cache still says 1.
    aws_world.client("ec2").cancel_capacity_reservation(CapacityReservationId=rid)
    fleets = recorded_fleets(cloud)
    with pytest.raises(InsufficientCapacityError) as refused:
        cloud.create(claim("refused", "default", ANY_BUT_SPOT, AMD64, LARGE))
    assert "ReservationCapacityExceeded" in str(refused.value)
    assert cloud.aws.reservations.available(rid) == 0
    relaunched = cloud.create(claim("fallback", "default", ANY_BUT_SPOT, AMD64, LARGE))
    assert (relaunched.metadata.labels or {})[wk.LABEL_CAPACITY_TYPE] == wk.CAPACITY_TYPE_ON_DEMAND
    assert wk.LABEL_CAPACITY_RESERVATION_ID not in (relaunched.metadata.labels or {})
    fallback = template_data(
        aws_world, fleets[-1]["LaunchTemplateConfigs"][0]["LaunchTemplateSpecification"]["LaunchTemplateName"]
    )
    assert fallback["CapacityReservationSpecification"] == {"CapacityReservationPreference": "none"}


def test_with_the_gate_off_reservations_are_not_offered(aws_world: AWSWorld) -> None:
    cloud, nodeclass, _ = reserved_cloud(aws_world, 2)
    cloud.settings = replace(
        cloud.settings, feature_gates=replace(cloud.settings.feature_gates, reserved_capacity=False)
    )
    types = cloud._instance_types(nodeclass, None)
    assert all(o.capacity_type != wk.CAPACITY_TYPE_RESERVED for it in types for o in it.offerings)


@pytest.mark.parametrize("granted", [True, False])
def test_a_reserved_launch_needs_the_reservation_in_the_launch_statement(aws_world: AWSWorld, granted: bool) -> None:
    """The provisioner's synthesized role, enforced: it launches into the reservation, and without
    ``capacity-reservation/*`` among the launch statement's resources the same CreateFleet is denied."""
    stack = synthesized()
    clients, iam = gated(
        aws_world, stack if granted else without_resource(stack, "capacity-reservation/*"), "provisioner"
    )
    cloud, _, rid = reserved_cloud(aws_world, 1, clients)
    if granted:
        launched = cloud.create(claim("reserved-allowed", "default", ANY_BUT_SPOT, AMD64, LARGE))
        assert (launched.metadata.labels or {})[wk.LABEL_CAPACITY_RESERVATION_ID] == rid
        assert iam.denied == 0
        return
    with pytest.raises(CreateError, match="UnauthorizedOperation"):
        cloud.create(claim("reserved-denied", "default", ANY_BUT_SPOT, AMD64, LARGE))
    assert iam.denied and any("capacity-reservation" in d.resource for d in iam.denials)
