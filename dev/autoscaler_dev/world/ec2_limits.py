"""EC2's request throttling and every AWS call's latency, as plugs of the AWS call gate (``aws_gate``), on the
virtual clock.

Throttling follows "Request throttling for the Amazon EC2 API" (EC2 developer guide): per account and region, one
request token bucket per API, sized by the API's category, and resource token buckets for the actions that
create or end instances, which take one token per instance. An attempt that finds its bucket short answers
``RequestLimitExceeded`` (HTTP 503) and takes nothing; buckets refill continuously at their rate on the virtual
clock. The sizes below are the guide's defaults; an account can have them raised.

Latency: each attempt of each API takes a time drawn from a log-normal distribution around the API's median
(describes tens to hundreds of milliseconds, CreateFleet one to a few seconds), deterministic for a seed. The
virtual clock is moved to the attempt's end when its answer arrives (never back), so attempts made side by side
(the tagging threads) overlap: each ends at its own start plus its latency.
"""

from __future__ import annotations

import math
import random
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from autoscaler_dev.world.aws_gate import AwsCall, Refusal


@dataclass(frozen=True)
class BucketSize:
    capacity: float
    refill_per_second: float


# Request token buckets, by category (one bucket per API of the category).
NON_MUTATING = BucketSize(100, 20)
UNFILTERED_NON_MUTATING = BucketSize(50, 10)  # Describe* without filters, ids or pagination
MUTATING = BucketSize(50, 5)
# Resource token buckets: one token per instance the call launches or terminates.
RESOURCE_BUCKETS = {"RunInstances": BucketSize(1000, 2), "TerminateInstances": BucketSize(1000, 20)}
_LAUNCHES = {"RunInstances": "RunInstances", "CreateFleet": "RunInstances"}  # CreateFleet (instant) draws on it


@dataclass
class TokenBucket:
    size: BucketSize
    tokens: float
    at: float  # virtual seconds of the last refill

    def take(self, now: float, tokens: float) -> bool:
        self.tokens = min(self.size.capacity, self.tokens + (now - self.at) * self.size.refill_per_second)
        self.at = now
        if self.tokens < tokens:
            return False
        self.tokens -= tokens
        return True


def _non_mutating(operation: str) -> bool:
    return operation.startswith(("Describe", "Get", "List"))


def _unfiltered(params: Mapping[str, Any]) -> bool:
    return not any(key in {"Filters", "MaxResults"} or key.endswith("Ids") for key in params)


def _resource_tokens(call: AwsCall) -> tuple[str, float] | None:
    if call.operation in _LAUNCHES:
        if call.operation == "CreateFleet":
            count = call.params.get("TargetCapacitySpecification", {}).get("TotalTargetCapacity", 1)
        else:
            count = call.params.get("MaxCount", 1)
        return _LAUNCHES[call.operation], float(count)
    if call.operation == "TerminateInstances":
        return "TerminateInstances", float(len(call.params.get("InstanceIds", ())))
    return None


class Ec2RateLimits:
    """EC2's token buckets for the whole account (every function draws on the same ones); the sizes default to
    EC2's and can be set per category (tests make them small)."""

    def __init__(
        self,
        now: Callable[[], float],
        *,
        non_mutating: BucketSize = NON_MUTATING,
        unfiltered: BucketSize = UNFILTERED_NON_MUTATING,
        mutating: BucketSize = MUTATING,
        resources: Mapping[str, BucketSize] = RESOURCE_BUCKETS,
    ) -> None:
        self.now = now
        self.non_mutating, self.unfiltered, self.mutating, self.resources = (
            non_mutating,
            unfiltered,
            mutating,
            resources,
        )
        self.throttled = 0
        self.by_operation: dict[str, int] = {}
        self._requests: dict[str, TokenBucket] = {}
        self._resources: dict[str, TokenBucket] = {}
        self._lock = threading.Lock()

    def on_call(self, call: AwsCall) -> Refusal | None:
        return None

    def on_response(self, call: AwsCall) -> None:
        return None

    def on_attempt(self, call: AwsCall) -> Refusal | None:
        if call.service != "ec2":
            return None
        with self._lock:
            now = self.now()
            request = self._bucket(self._requests, call.operation, self._size(call), now)
            if request.take(now, 1):
                resource = _resource_tokens(call)
                if resource is None:
                    return None
                kind, count = resource
                if self._bucket(self._resources, kind, self.resources[kind], now).take(now, count):
                    return None
                request.tokens += 1  # a refused attempt takes nothing: the request token goes back
            self.throttled += 1
            self.by_operation[call.operation] = self.by_operation.get(call.operation, 0) + 1
        return Refusal(503, "RequestLimitExceeded", "Request limit exceeded.")

    def _size(self, call: AwsCall) -> BucketSize:
        if not _non_mutating(call.operation):
            return self.mutating
        return self.unfiltered if _unfiltered(call.params) else self.non_mutating

    @staticmethod
    def _bucket(buckets: dict[str, TokenBucket], key: str, size: BucketSize, now: float) -> TokenBucket:
        if key not in buckets:
            buckets[key] = TokenBucket(size, size.capacity, now)
        return buckets[key]


# Median seconds per API (and the default per service); spread is the log-normal sigma.
MEDIAN_SECONDS: dict[str, float] = {
    "ec2:CreateFleet": 2.0,
    "ec2:RunInstances": 1.5,
    "ec2:TerminateInstances": 0.4,
    "ec2:CreateLaunchTemplate": 0.3,
    "ec2:DeleteLaunchTemplate": 0.2,
    "ec2:CreateTags": 0.08,
    "ec2:DescribeInstanceTypes": 0.3,
    "ec2:DescribeSpotPriceHistory": 0.2,
    "ec2": 0.1,
    "iam": 0.15,
    "ssm": 0.05,
    "sqs": 0.02,
    "dynamodb": 0.008,
    "eks": 0.1,
    "pricing": 0.3,
}
SPREAD = 0.4


@dataclass
class Latency:
    """Moves the virtual clock by each attempt's latency: ``advance_to(t)`` never goes back."""

    now: Callable[[], float]
    advance_to: Callable[[float], None]
    seed: int = 0
    medians: Mapping[str, float] = field(default_factory=lambda: dict(MEDIAN_SECONDS))
    seconds: float = 0.0  # all latency added up (attempts side by side overlap on the clock, not here)

    def __post_init__(self) -> None:
        self._random = random.Random(self.seed)
        self._lock = threading.Lock()
        self._ends = threading.local()  # when this thread's attempt in flight ends

    def on_call(self, call: AwsCall) -> Refusal | None:
        return None

    def on_attempt(self, call: AwsCall) -> Refusal | None:
        median = self.medians.get(f"{call.service}:{call.operation}", self.medians.get(call.service, 0.05))
        with self._lock:
            took = median * math.exp(self._random.gauss(0.0, SPREAD))
            self.seconds += took
        self._ends.at = self.now() + took
        return None

    def on_response(self, call: AwsCall) -> None:
        end = getattr(self._ends, "at", None)
        if end is not None:
            self.advance_to(end)
            self._ends.at = None
