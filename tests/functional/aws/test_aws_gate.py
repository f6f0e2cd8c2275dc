"""The AWS call gate against moto over HTTP, through botocore as the functions' clients are built: a denied call
fails as AWS fails it and never reaches the service; a throttled attempt is retried by the client's own retry
policy and succeeds once the bucket has refilled on the virtual clock."""

from __future__ import annotations

import uuid

import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from autoscaler.providers.aws.clients import CLIENT_CONFIG, AWSClients
from autoscaler_dev.iam.enforcer import IamEnforcer
from autoscaler_dev.iam.template import StackRoles, world_names
from autoscaler_dev.world.aws_gate import AwsCallGate, Plug
from autoscaler_dev.world.aws_world import REGION, AWSWorld
from autoscaler_dev.world.clock import VirtualClock
from autoscaler_dev.world.ec2_limits import BucketSize, Ec2RateLimits
from autoscaler_dev.world.gates import IamPlug, MotoInventory
from tests.unit.iam.test_calls import ENV
from tests.unit.iam.test_enforcer import TABLE_READS, template


def clients(world: AWSWorld, plugs: list[Plug], config: Config = CLIENT_CONFIG) -> AWSClients:
    return AWSClients(
        REGION, endpoint_url=world.endpoint, session=AwsCallGate(plugs).session("provisioner"), config=config
    )


def enforcer(world: AWSWorld) -> IamEnforcer:
    stack = template([TABLE_READS])
    names = world_names(stack, {"STATE_TABLE_NAME": "world-state"}, {})
    return IamEnforcer(StackRoles(stack, ENV, names), MotoInventory(world), ENV)


def test_a_denied_call_fails_as_aws_fails_it_and_never_reaches_the_service(aws_world: AWSWorld) -> None:
    iam = enforcer(aws_world)
    ec2 = clients(aws_world, [IamPlug(iam)]).ec2
    name = f"gate-{uuid.uuid4().hex[:8]}"
    with pytest.raises(ClientError) as denied:
        ec2.create_launch_template(LaunchTemplateName=name, LaunchTemplateData={"ImageId": "ami-0123"})
    error = denied.value.response
    assert error["Error"]["Code"] == "UnauthorizedOperation"
    assert error["ResponseMetadata"]["HTTPStatusCode"] == 403
    assert (
        "assumed-role/ProvisionerRole/provisioner is not authorized to perform: ec2:CreateLaunchTemplate"
        in (error["Error"]["Message"])
    )
    names = [t["LaunchTemplateName"] for t in aws_world.client("ec2").describe_launch_templates()["LaunchTemplates"]]
    assert name not in names
    dynamodb = clients(aws_world, [IamPlug(iam)]).dynamodb
    with pytest.raises(ClientError) as other_table:
        dynamodb.get_item(TableName="someone-elses", Key={"key": {"S": "x"}})
    assert other_table.value.response["Error"]["Code"] == "AccessDeniedException"
    assert iam.denied == 2 and [d.action for d in iam.denials] == ["ec2:CreateLaunchTemplate", "dynamodb:GetItem"]


def test_a_throttled_attempt_is_retried_and_succeeds_after_the_refill(aws_world: AWSWorld) -> None:
    clock = VirtualClock()
    limits = Ec2RateLimits(lambda: clock.elapsed, mutating=BucketSize(1, 5))
    ec2 = clients(aws_world, [limits]).ec2  # the functions' retry policy (adaptive, 5 attempts)
    group = aws_world.security_group
    for n in range(2):
        ec2.create_tags(Resources=[group], Tags=[{"Key": "gate-test", "Value": str(n)}])
    assert limits.throttled >= 1  # the second found the bucket empty, and botocore retried it
    tags = aws_world.client("ec2").describe_tags(Filters=[{"Name": "resource-id", "Values": [group]}])["Tags"]
    assert {"Key": "gate-test", "Value": "1", "ResourceId": group, "ResourceType": "security-group"} in tags


def test_without_retries_a_throttled_call_raises_request_limit_exceeded(aws_world: AWSWorld) -> None:
    limits = Ec2RateLimits(lambda: 0.0, mutating=BucketSize(1, 1))  # a clock that never moves: no refill
    ec2 = clients(aws_world, [limits], Config(retries={"mode": "standard", "max_attempts": 1})).ec2
    ec2.create_tags(Resources=[aws_world.security_group], Tags=[{"Key": "gate-test", "Value": "a"}])
    with pytest.raises(ClientError) as throttled:
        ec2.create_tags(Resources=[aws_world.security_group], Tags=[{"Key": "gate-test", "Value": "b"}])
    assert throttled.value.response["Error"]["Code"] == "RequestLimitExceeded"
    assert throttled.value.response["ResponseMetadata"]["HTTPStatusCode"] == 503
