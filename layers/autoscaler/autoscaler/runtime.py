"""What a Lambda handler needs from its execution environment, built once per container so that warm
invocations reuse clients, caches and connections. This is the one place that wires adapters for a function:

- :class:`Runtime`: the real adapters from the function's environment (``autoscaler.settings``): the
  Kubernetes adapter (EKS IAM, or whatever ``kube.connect`` finds), the AWS cloud provider reading
  EC2NodeClasses through it (or not at all, for functions that only ask whether instances exist), the shared
  cache of unavailable offerings and the leases in the state table, and the interruption dead-letter queue.
- :func:`powertools`: Powertools' logger, tracer and metrics for a function, the core's loggers routed
  through the same JSON logger, and :meth:`Powertools.publish` for the metric points controllers report.

Handlers call :func:`current` inside the invocation (never at import, so a cold start that fails to reach the
cluster fails that invocation with a clear error, and the next one tries again). Tests and local runs
:func:`install` a runtime of their own, e.g. one with an injected clock.
"""

from __future__ import annotations

import os
import warnings
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.logging.utils import copy_config_to_registered_loggers
from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit
from aws_lambda_powertools.utilities.parser.models import EventBridgeModel
from pydantic import Field

from autoscaler.clock import utc_now
from autoscaler.cloudprovider.lease import InMemoryLeases, Leases
from autoscaler.cloudprovider.port import UnavailableOfferings
from autoscaler.cloudprovider.unavailable import InMemoryUnavailableOfferings
from autoscaler.kube.client import KubernetesCluster
from autoscaler.kube.connect import cluster_from_environment
from autoscaler.metrics import NAMESPACE, SERVICE_DIMENSION, SKIPPED_EVENTS, Dimensions, MetricPoint
from autoscaler.providers.aws.clients import AWSClients
from autoscaler.providers.aws.deadletters import SqsDeadLetters
from autoscaler.providers.aws.leases import DynamoDBLeases
from autoscaler.providers.aws.provider import AWSCloudProvider
from autoscaler.providers.aws.unavailable import DynamoDBUnavailableOfferings
from autoscaler.settings import Settings

if TYPE_CHECKING:  # the port only: the interruption controller is not every function's
    from autoscaler.controllers.interruption import DeadLetters


class ScheduledEvent(EventBridgeModel):
    """What an EventBridge schedule invokes a function with (the sweeps every event trigger has)."""

    source: Literal["aws.events"]
    detail_type: Literal["Scheduled Event"] = Field(alias="detail-type")


@dataclass(frozen=True, eq=False)  # a runtime is one container's adapters: compared and hashed by identity
class Runtime:
    settings: Settings
    cluster: KubernetesCluster
    cloud: AWSCloudProvider
    unavailable: UnavailableOfferings
    leases: Leases
    dead_letters: DeadLetters | None  # the interruption queue's DLQ, when INTERRUPTION_DLQ_URL is set
    clock: Callable[[], datetime]

    @classmethod
    def build(
        cls,
        settings: Settings | None = None,
        *,
        clock: Callable[[], datetime] = utc_now,
        read_nodeclasses: bool = True,
        cluster: KubernetesCluster | None = None,
    ) -> Runtime:
        """The real adapters. Without STATE_TABLE_NAME (a local run) the unavailable offerings and leases are
        kept in memory, which only serializes passes within this process.

        ``read_nodeclasses=False`` gives a cloud provider that never reads EC2NodeClasses: the instances it
        returns carry no instance-type details, so it needs neither the class nor DescribeInstanceTypes and
        prices (termination, which only asks whether an instance is still there). ``cluster`` replaces the
        Kubernetes adapter found from the environment (tests: one with short retries)."""
        settings = settings or Settings.from_env()
        clients = AWSClients(settings.region)
        table = settings.state_table_name
        unavailable: UnavailableOfferings = (
            DynamoDBUnavailableOfferings(clients, table, clock) if table else InMemoryUnavailableOfferings(clock)
        )
        leases: Leases = DynamoDBLeases(clients, table, clock) if table else InMemoryLeases(clock)
        cluster = cluster or cluster_from_environment(settings)
        nodeclasses = cluster.nodeclass if read_nodeclasses else _no_nodeclass
        cloud = AWSCloudProvider(settings, nodeclasses, clients=clients, unavailable=unavailable, clock=clock)
        dlq = settings.interruption_dlq_url
        return cls(
            settings=settings,
            cluster=cluster,
            cloud=cloud,
            unavailable=unavailable,
            leases=leases,
            dead_letters=SqsDeadLetters(clients, dlq) if dlq else None,
            clock=clock,
        )


def _no_nodeclass(name: str) -> None:
    return None


class _Container:
    runtime: Runtime | None = None


_container = _Container()


def current(*, read_nodeclasses: bool = True) -> Runtime:
    """This container's runtime, built on first use from the environment (with ``read_nodeclasses`` as
    :meth:`Runtime.build` takes it; a container runs one function, so the first call's option holds)."""
    if _container.runtime is None:
        _container.runtime = Runtime.build(read_nodeclasses=read_nodeclasses)
    return _container.runtime


def install(runtime: Runtime | None) -> None:
    """Use ``runtime`` from now on (tests, local runs); None builds the real one again on next use."""
    _container.runtime = runtime


@dataclass(frozen=True)
class Powertools:
    service: str
    namespace: str
    logger: Logger
    tracer: Tracer
    metrics: Metrics

    def publish(self, points: Iterable[MetricPoint]) -> None:
        """Points without dimensions join the invocation's metrics (flushed by ``log_metrics``). Points with
        dimensions go out at once, one EMF record per set of dimensions, under two dimension sets: ``service``
        alone (so the function's whole series exists for the dashboard and alarms) and ``service`` with theirs.
        Points of one name in a record make its list of values. Empty dimension values are dropped: CloudWatch
        refuses them."""
        groups: defaultdict[Dimensions, list[MetricPoint]] = defaultdict(list)
        for point in points:
            groups[tuple((key, value) for key, value in point.dimensions if value)].append(point)
        for dimensions, group in groups.items():
            if not dimensions:
                _add(self.metrics, group)
                continue
            record = EphemeralMetrics(namespace=self.namespace, service=self.service)
            record.add_dimensions(**{SERVICE_DIMENSION: self.service, **dict(dimensions)})
            _add(record, group)
            record.flush_metrics()

    def skip(self, reason: str, **extra: Any) -> None:
        """Log and count an event the handler will not act on (not retried: it would fail the same way)."""
        self.logger.warning(f"skipped: {reason}", extra=extra, stacklevel=3)  # where the handler skipped
        self.metrics.add_metric(name=SKIPPED_EVENTS, unit=MetricUnit.Count, value=1)


def _add(record: Metrics | EphemeralMetrics, points: Iterable[MetricPoint]) -> None:
    for point in points:
        record.add_metric(name=point.name, unit=MetricUnit(point.unit), value=point.value)


def powertools(service: str) -> Powertools:
    """Logger, tracer and metrics for the function ``service``; the stack sets POWERTOOLS_SERVICE_NAME and
    POWERTOOLS_METRICS_NAMESPACE, these are the defaults elsewhere."""
    namespace = os.environ.get("POWERTOOLS_METRICS_NAMESPACE", NAMESPACE)
    # Points with dimensions go out in records of their own (publish), so an invocation's set may be empty.
    warnings.filterwarnings("ignore", message="No application metrics to publish")
    logger = Logger(service=service)
    copy_config_to_registered_loggers(source_logger=logger, include={"autoscaler"})  # the core's logs as JSON
    return Powertools(
        service=service,
        namespace=namespace,
        logger=logger,
        tracer=Tracer(service=service),
        metrics=Metrics(namespace=namespace, service=service),
    )
