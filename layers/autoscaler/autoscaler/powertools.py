"""Powertools for the functions, and the one decorator every handler wears.

:func:`powertools` gives a function its logger, tracer and metrics (the core's loggers routed through the same
JSON logger). :meth:`Powertools.handler` is a Powertools ``lambda_handler_decorator`` for what every handler
repeats, so that a handler reads as parse -> controller -> typed result:

- the event is validated against the handler's model; one that does not fit is skipped and counted
  (``skip``), or refused with a ValueError (``reject``: a caller's error, for direct invocations);
- the handler receives the parsed event and an :class:`Invocation` (request id, time left);
- it returns an :class:`Answer` (or a :class:`Skip`): its metric points are published, its summary logged
  on one line, its result returned to Lambda. Powertools' logger context, tracer and metrics flush wrap it all.

:meth:`Powertools.records` reads an SQS batch record by record, for the two queue-fed functions.

No adapter is imported here: the conversion webhook, which wires none, uses this module too.
"""

from __future__ import annotations

import json
import os
import threading
import warnings
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Generic, TypeVar

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.logging.utils import copy_config_to_registered_loggers
from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit
from aws_lambda_powertools.metrics.functions import is_metrics_disabled
from aws_lambda_powertools.middleware_factory import lambda_handler_decorator
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import TypeAdapter, ValidationError

from autoscaler import snapstart
from autoscaler.events import SqsBatch, SqsRecord
from autoscaler.metrics import NAMESPACE, SERVICE_DIMENSION, SKIPPED_EVENTS, Dimensions, MetricPoint

T = TypeVar("T")
LOGGED_ERROR_CHARS = 512  # of a validation error: enough to see what was wrong, never the whole event
EMF_VALUES = 100  # values of one metric in one EMF record (CloudWatch's limit)
UNREADABLE = (ValidationError, ValueError, RecursionError, OverflowError)  # too deep, or the year 9999


@dataclass(frozen=True)
class Invocation:
    """What a handler reads of the Lambda context."""

    context: LambdaContext

    @property
    def request_id(self) -> str:
        return self.context.aws_request_id

    def time_left(self) -> float:
        """Seconds left before Lambda ends the invocation."""
        return self.context.get_remaining_time_in_millis() / 1000


@dataclass(frozen=True)
class Answer:
    """A handler's typed result: ``result`` goes back to Lambda, ``points`` are published, and one line with
    ``message`` is logged, carrying ``logged`` (the result itself when None)."""

    message: str
    result: Any
    points: Iterable[MetricPoint] = ()
    logged: Mapping[str, Any] | None = None
    warning: bool = False  # log the line as a warning (a request refused)


@dataclass(frozen=True)
class Skip:
    """An event the handler will not act on: logged and counted, answered ``{"skipped": reason}``."""

    reason: str
    extra: Mapping[str, Any] = field(default_factory=dict)


class BatchFailed(Exception):
    """Every record of a batch failed: the invocation fails too, so that Lambda counts an error (and the function's
    error alarm can fire) rather than a success that redelivers everything."""


@dataclass
class Records(Generic[T]):
    """An SQS batch read record by record: what the readable records said, and the ones that failed."""

    total: int = 0
    items: list[T] = field(default_factory=list)
    unreadable: list[SqsRecord] = field(default_factory=list)  # valid records whose body could not be read
    failed: dict[str, str] = field(default_factory=dict)  # message id -> why: the batch item failures

    def failures(self, *retry: str) -> list[dict[str, str]]:
        """The partial batch response's ``batchItemFailures``: the failed records and ``retry``, each once."""
        return [{"itemIdentifier": message_id} for message_id in dict.fromkeys([*self.failed, *retry])]

    def response(self, *retry: str) -> dict[str, list[dict[str, str]]]:
        """``failures`` as the partial batch response; raises BatchFailed when no record succeeded."""
        failures = self.failures(*retry)
        if self.total and len(failures) >= self.total:
            raise BatchFailed(f"all {self.total} records of the batch failed")
        return {"batchItemFailures": failures}


@dataclass(frozen=True)
class Powertools:
    service: str
    namespace: str
    logger: Logger
    tracer: Tracer | None
    metrics: Metrics
    _record_lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

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
            with self._record_lock:  # one record, emptied by each flush: building one per set cost more than the rest
                record = self._record
                record.add_dimensions(**{SERVICE_DIMENSION: self.service, **dict(dimensions)})
                _add(record, group)
                if record.metric_set:
                    record.flush_metrics()
                else:  # only series, out already: the dimensions must not stay for the next set
                    record.clear_metrics()

    @cached_property
    def _record(self) -> EphemeralMetrics:
        return EphemeralMetrics(namespace=self.namespace, service=self.service)

    def skip(self, reason: str, **extra: Any) -> None:
        """Log and count an event the handler will not act on (not retried: it would fail the same way)."""
        self.logger.warning(f"skipped: {reason}", extra=extra, stacklevel=3)  # where the handler skipped
        self.metrics.add_metric(name=SKIPPED_EVENTS, unit=MetricUnit.Count, value=1)

    def handler(
        self, model: Any = None, *, skip: str = "", reject: str = "", skipped: Any = None
    ) -> Callable[[Callable[[Any, Invocation], Answer | Skip]], Callable[[Any, LambdaContext], Any]]:
        """The decorator of a handler ``f(event, invocation) -> Answer | Skip`` that takes events of type
        ``model`` (None: any, passed as is). An event that does not validate is skipped with the reason
        ``skip``, or, with ``reject`` (what was expected), refused with a ValueError. ``skipped`` replaces the
        answer a skipped event gets."""
        adapter = None if model is None else TypeAdapter(model)

        def decorate(function: Callable[[Any, Invocation], Answer | Skip]) -> Callable[[Any, LambdaContext], Any]:
            wrapped = _invoked(function, tools=self, adapter=adapter, skip=skip, reject=reject, skipped=skipped)
            wrapped = self.metrics.log_metrics(wrapped)
            if self.tracer is not None:
                wrapped = self.tracer.capture_lambda_handler(wrapped)
            return self.logger.inject_lambda_context(wrapped)

        return decorate

    def records(
        self,
        batch: SqsBatch,
        read: Callable[[SqsRecord], T | None],
        *,
        counted: str = "",
        ignored: str = "",
    ) -> Records[T]:
        """Each record of ``batch`` through ``read``. A record that is not an SQS record, or whose ``read``
        raises a validation error, is logged (and counted as ``counted``) and fails alone; one ``read`` answers
        None for is skipped with the reason ``ignored``."""
        found: Records[T] = Records(total=len(batch.records))
        for raw in batch.records:
            message_id = raw.get("messageId") if isinstance(raw, dict) else None
            record = None
            try:
                record = SqsRecord.model_validate(raw)
                item = read(record)
            except UNREADABLE as error:
                self.logger.warning("unreadable message", extra={"message_id": message_id, "error": _cut(error)})
                if counted:
                    self.metrics.add_metric(name=counted, unit=MetricUnit.Count, value=1)
                if record is not None:
                    found.unreadable.append(record)
                if isinstance(message_id, str):  # one without cannot be reported: its redrive policy handles it
                    found.failed[message_id] = _cut(error) or type(error).__name__
                continue
            if item is None:
                self.skip(ignored, message_id=message_id)
            else:
                found.items.append(item)
        return found


@lambda_handler_decorator
def _invoked(
    handler: Callable[[Any, Invocation], Answer | Skip],
    event: Any,
    context: LambdaContext,
    *,
    tools: Powertools,
    adapter: TypeAdapter[Any] | None,
    skip: str,
    reject: str,
    skipped: Any,
) -> Any:
    parsed = event
    if adapter is not None:
        try:
            parsed = adapter.validate_python(event)
        except ValidationError as error:
            if reject:
                raise ValueError(f"{tools.service}: expected {reject}: {error}") from error
            tools.skip(skip, error=_cut(error))
            return {"skipped": skip} if skipped is None else skipped
    answer = handler(parsed, Invocation(context))
    if isinstance(answer, Skip):
        tools.skip(answer.reason, **answer.extra)
        return {"skipped": answer.reason} if skipped is None else skipped
    tools.publish(answer.points)
    logged = dict(answer.result if answer.logged is None else answer.logged)
    (tools.logger.warning if answer.warning else tools.logger.info)(answer.message, extra=logged)
    return answer.result


def _cut(error: Exception) -> str:
    return str(error)[:LOGGED_ERROR_CHARS]


def _add(record: Metrics | EphemeralMetrics, points: Iterable[MetricPoint]) -> None:
    """Single values join ``record``; a name with many values (a latency per message) goes out at once as records
    of its own, at most ``EMF_VALUES`` values each: Powertools' ``add_metric`` formats the metric's whole list for
    a debug line on every call (38 us per value at 100 values, against 1.1 us this way)."""
    series: defaultdict[tuple[str, str], list[float]] = defaultdict(list)
    for point in points:
        series[(point.name, point.unit)].append(float(point.value))
    for (name, unit), values in series.items():
        if len(values) == 1:
            record.add_metric(name=name, unit=MetricUnit(unit), value=values[0])
            continue
        for start in range(0, len(values), EMF_VALUES):
            chunk = values[start : start + EMF_VALUES]
            metric = {"Unit": MetricUnit(unit).value, "StorageResolution": 60, "Value": chunk}
            if not is_metrics_disabled():
                print(json.dumps(record.serialize_metric_set(metrics={name: metric}), separators=(",", ":")))


def powertools(
    service: str, *, tracing: bool = True, preload: Sequence[str] = snapstart.KUBERNETES_CLIENT
) -> Powertools:
    """Logger, tracer (unless ``tracing`` is off) and metrics for the function ``service``; the stack sets
    POWERTOOLS_SERVICE_NAME and POWERTOOLS_METRICS_NAMESPACE, these are the defaults elsewhere. Registers the
    SnapStart hooks, with ``preload`` imported before the snapshot."""
    snapstart.register(preload)
    namespace = os.environ.get("POWERTOOLS_METRICS_NAMESPACE", NAMESPACE)
    # Points with dimensions go out in records of their own (publish), so an invocation's set may be empty.
    warnings.filterwarnings("ignore", message="No application metrics to publish")
    logger = Logger(service=service)
    copy_config_to_registered_loggers(source_logger=logger, include={"autoscaler"})  # the core's logs as JSON
    return Powertools(
        service=service,
        namespace=namespace,
        logger=logger,
        tracer=Tracer(service=service) if tracing else None,
        metrics=Metrics(namespace=namespace, service=service),
    )
