"""A runtime over the in-memory doubles of Kubernetes and EC2, for tests of the real handlers without a network."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from autoscaler.clock import utc_now
from autoscaler.cloudprovider.lease import InMemoryLeases
from autoscaler.cloudprovider.unavailable import InMemoryUnavailableOfferings
from autoscaler.controllers.interruption import DeadLetters
from autoscaler.runtime import Runtime
from autoscaler.settings import Settings
from tests.support.memory_cloud import MemoryCloud
from tests.support.memory_cluster import MemoryCluster


def memory_runtime(
    cluster: MemoryCluster,
    cloud: MemoryCloud | None = None,
    *,
    dead_letters: DeadLetters | None = None,
    clock: Callable[[], datetime] = utc_now,
) -> Runtime:
    return Runtime(
        settings=Settings(cluster_name="memory", region="us-west-2"),
        cluster=cluster,  # type: ignore[arg-type]  # the adapter's double
        cloud=cloud or MemoryCloud(),  # type: ignore[arg-type]
        unavailable=InMemoryUnavailableOfferings(clock),
        leases=InMemoryLeases(clock),
        dead_letters=dead_letters,
        clock=clock,
    )
