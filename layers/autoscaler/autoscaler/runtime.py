"""What a Lambda handler needs from its execution environment, built once per container so that warm
invocations reuse clients, caches and connections:

- :class:`Runtime`: the real adapters from the function's environment (``autoscaler.settings``): the
  Kubernetes adapter (EKS IAM, or whatever ``kube.connect`` finds), the AWS cloud provider reading
  EC2NodeClasses through it, the shared cache of unavailable offerings and the leases in the state table.
- :func:`powertools`: Powertools' logger, tracer and metrics for a function, the core's loggers routed
  through the same JSON logger, and :meth:`Powertools.publish` for the metric points controllers report.

Handlers call :func:`current` inside the invocation (never at import, so a cold start that fails to reach the
cluster fails that invocation with a clear error, and the next one tries again). Tests and local runs
:func:`install` a runtime of their own, e.g. one with an injected clock.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.logging.utils import copy_config_to_registered_loggers
from aws_lambda_powertools.metrics import MetricUnit, single_metric

from autoscaler.cloudprovider.lease import InMemoryLeases, Leases
from autoscaler.cloudprovider.port import UnavailableOfferings
from autoscaler.cloudprovider.unavailable import InMemoryUnavailableOfferings
from autoscaler.kube.client import KubernetesCluster
from autoscaler.kube.connect import cluster_from_environment
from autoscaler.metrics import NAMESPACE, SERVICE_DIMENSION, MetricPoint
from autoscaler.providers.aws.cache import utc_now
from autoscaler.providers.aws.clients import AWSClients
from autoscaler.providers.aws.leases import DynamoDBLeases
from autoscaler.providers.aws.provider import AWSCloudProvider
from autoscaler.providers.aws.unavailable import DynamoDBUnavailableOfferings
from autoscaler.settings import Settings


@dataclass(frozen=True)
class Runtime:
    settings: Settings
    cluster: KubernetesCluster
    cloud: AWSCloudProvider
    leases: Leases
    clock: Callable[[], datetime]

    @classmethod
    def build(cls, settings: Settings | None = None, *, clock: Callable[[], datetime] = utc_now) -> Runtime:
        """The real adapters. Without STATE_TABLE_NAME (a local run) the unavailable offerings and leases are
        kept in memory, which only serializes passes within this process."""
        settings = settings or Settings.from_env()
        clients = AWSClients(settings.region)
        table = settings.state_table_name
        unavailable: UnavailableOfferings = (
            DynamoDBUnavailableOfferings(clients, table, clock) if table else InMemoryUnavailableOfferings(clock)
        )
        leases: Leases = DynamoDBLeases(clients, table, clock) if table else InMemoryLeases(clock)
        cluster = cluster_from_environment(settings)
        cloud = AWSCloudProvider(settings, cluster.nodeclass, clients=clients, unavailable=unavailable, clock=clock)
        return cls(settings=settings, cluster=cluster, cloud=cloud, leases=leases, clock=clock)


class _Container:
    runtime: Runtime | None = None


_container = _Container()


def current() -> Runtime:
    """This container's runtime, built on first use from the environment."""
    if _container.runtime is None:
        _container.runtime = Runtime.build()
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
        """Points without dimensions join the invocation's metrics (flushed by ``log_metrics``); each point with
        dimensions is its own EMF record, keeping the service dimension. Empty dimension values are dropped:
        CloudWatch refuses them."""
        for point in points:
            unit = MetricUnit(point.unit)
            dimensions = {key: value for key, value in point.dimensions if value}
            if not dimensions:
                self.metrics.add_metric(name=point.name, unit=unit, value=point.value)
                continue
            with single_metric(
                name=point.name,
                unit=unit,
                value=point.value,
                namespace=self.namespace,
                default_dimensions={SERVICE_DIMENSION: self.service, **dimensions},
            ):
                pass


def powertools(service: str) -> Powertools:
    """Logger, tracer and metrics for the function ``service``; the stack sets POWERTOOLS_SERVICE_NAME and
    POWERTOOLS_METRICS_NAMESPACE, these are the defaults elsewhere."""
    namespace = os.environ.get("POWERTOOLS_METRICS_NAMESPACE", NAMESPACE)
    logger = Logger(service=service)
    copy_config_to_registered_loggers(source_logger=logger, include={"autoscaler"})  # the core's logs as JSON
    return Powertools(
        service=service,
        namespace=namespace,
        logger=logger,
        tracer=Tracer(service=service),
        metrics=Metrics(namespace=namespace, service=service),
    )
