"""A runtime over the in-memory doubles of Kubernetes and EC2, for tests of the real handlers without a network."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from autoscaler.clock import utc_now
from autoscaler.cloudprovider.lease import InMemoryLeases
from autoscaler.cloudprovider.unavailable import InMemoryUnavailableOfferings
from autoscaler.controllers.batch_skip import InMemoryLastPass, LastPassStore
from autoscaler.controllers.interruption import DeadLetters
from autoscaler.controllers.state import NodeClassIndex
from autoscaler.events import SqsRecord
from autoscaler.runtime import Redelivery, Runtime
from autoscaler.settings import Settings
from tests.support.memory_cloud import MemoryCloud
from tests.support.memory_cluster import MemoryCluster


class KeptInFlight:
    """Redelivery that releases nothing (the messages' visibility timeout does); ``released`` says what was asked."""

    def __init__(self) -> None:
        self.released: list[SqsRecord] = []

    def release(self, records: Sequence[SqsRecord]) -> None:
        self.released.extend(records)


def memory_runtime(
    cluster: MemoryCluster,
    cloud: MemoryCloud | None = None,
    *,
    dead_letters: DeadLetters | None = None,
    last_pass: LastPassStore | None = None,
    redelivery: Redelivery | None = None,
    clock: Callable[[], datetime] = utc_now,
) -> Runtime:
    cloud = cloud or MemoryCloud()
    return Runtime(
        settings=Settings(cluster_name="memory", region="us-west-2"),
        clock=clock,
        cluster=cluster,
        cloud=cloud,
        nodeclasses=NodeClassIndex(),
        nodeclass_resolver=cloud.resolver,
        launch_templates=cloud.launch_templates,
        instance_profiles=cloud.instance_profiles,
        unavailable=InMemoryUnavailableOfferings(clock),
        leases=InMemoryLeases(clock),
        last_pass=last_pass or InMemoryLastPass(),
        redelivery=redelivery or KeptInFlight(),
        dead_letters=dead_letters,
    )
