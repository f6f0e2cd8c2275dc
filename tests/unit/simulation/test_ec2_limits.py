"""EC2's token buckets and the calls' latency, on a clock the test moves (``autoscaler_dev.world.ec2_limits``)."""

from __future__ import annotations

from typing import Any

from autoscaler_dev.world.aws_gate import AwsCall
from autoscaler_dev.world.ec2_limits import MUTATING, NON_MUTATING, BucketSize, Ec2RateLimits, Latency


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def now(self) -> float:
        return self.t

    def advance_to(self, t: float) -> None:
        self.t = max(self.t, t)


def ec2(operation: str, **params: Any) -> AwsCall:
    return AwsCall("provisioner", "ec2", operation, params, "ec2")


def test_an_empty_bucket_throttles_until_it_refills() -> None:
    clock = Clock()
    limits = Ec2RateLimits(clock.now)
    tag = ec2("CreateTags", Resources=["i-1"], Tags=[])
    answers = [limits.on_attempt(tag) for _ in range(int(MUTATING.capacity) + 1)]
    assert all(a is None for a in answers[:-1])
    refused = answers[-1]
    assert refused is not None and (refused.status, refused.code) == (503, "RequestLimitExceeded")
    assert limits.throttled == 1 and limits.by_operation == {"CreateTags": 1}
    assert limits.on_attempt(tag) is not None  # no time passed: still empty
    clock.t += 1 / MUTATING.refill_per_second
    assert limits.on_attempt(tag) is None  # one token came back


def test_each_api_has_its_own_bucket_sized_by_its_category() -> None:
    clock = Clock()
    limits = Ec2RateLimits(clock.now, mutating=BucketSize(1, 1))
    assert limits.on_attempt(ec2("CreateTags")) is None
    assert limits.on_attempt(ec2("CreateTags")) is not None
    assert limits.on_attempt(ec2("TerminateInstances", InstanceIds=["i-1"])) is None  # another API
    describes = [limits.on_attempt(ec2("DescribeInstances", Filters=[])) for _ in range(int(NON_MUTATING.capacity))]
    assert all(a is None for a in describes)
    assert limits.on_attempt(ec2("DescribeInstances", Filters=[])) is not None
    other = Ec2RateLimits(clock.now)
    unfiltered = [other.on_attempt(ec2("DescribeInstances")) for _ in range(int(NON_MUTATING.capacity))]
    assert any(a is not None for a in unfiltered)  # unfiltered, unpaginated describes have a smaller bucket


def test_launches_take_a_token_per_instance_and_a_refused_launch_takes_nothing() -> None:
    clock = Clock()
    limits = Ec2RateLimits(
        clock.now, resources={"RunInstances": BucketSize(10, 2), "TerminateInstances": BucketSize(10, 1)}
    )

    def launch(count: int) -> AwsCall:
        return ec2("CreateFleet", TargetCapacitySpecification={"TotalTargetCapacity": count})

    assert limits.on_attempt(launch(8)) is None
    assert limits.on_attempt(launch(3)) is not None  # 2 instance tokens left
    assert limits.on_attempt(launch(2)) is None  # the refused launch left its request token and the 2
    clock.t += 1.0
    assert limits.on_attempt(launch(2)) is None  # refilled at 2 a second
    assert limits.on_attempt(ec2("TerminateInstances", InstanceIds=[f"i-{n}" for n in range(11)])) is not None


def test_latency_moves_the_clock_per_api_and_overlaps_side_by_side_calls() -> None:
    clock = Clock()
    latency = Latency(clock.now, clock.advance_to, seed=1)
    fleet, tags = ec2("CreateFleet"), ec2("CreateTags")
    latency.on_attempt(fleet)
    latency.on_response(fleet)
    assert 0.5 < clock.t < 8.0  # a fleet takes seconds
    start = clock.t
    latency.on_attempt(tags)
    latency.on_response(tags)
    assert 0.0 < clock.t - start < 0.5  # a tag, tens of milliseconds
    again = Latency(Clock().now, Clock().advance_to, seed=1)
    again.on_attempt(fleet)
    assert round(again.seconds, 6) == round(start, 6)  # deterministic for a seed
