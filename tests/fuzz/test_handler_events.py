"""Fuzz the event checks of the Lambda handlers that EventBridge and SQS invoke.

Each handler takes its own triggers and skips (logs and counts) everything else. The passes themselves are
replaced by a sentinel, so that the property under test is the parsing alone: for any event, the handler
either skips it with a reason or hands it to its pass, and never raises on the way. The provisioner's pure
parsers are fuzzed directly: ``trigger`` returns a trigger with a timezone-aware time (the FIFO skip rule compares
it with the last pass's aware start) or None, or raises ValidationError for a non-event, which ``read`` turns
into a counted batch item failure.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from pydantic import ValidationError

from autoscaler import metrics as shared_metrics
from autoscaler import runtime
from autoscaler.controllers.batch_skip import already_handled
from autoscaler.events import DETAIL_TYPES, FORWARDER_SOURCE, SqsBatch
from autoscaler_dev.harness import Context, load_handler
from tests.fuzz.budget import fuzz
from tests.fuzz.strategies import DEEP_JSON_TEXT, JSON, TRICKY_TEXT, mutated
from tests.support.memory_cloud import MemoryCloud
from tests.support.memory_cluster import MemoryCluster
from tests.support.memory_runtime import memory_runtime

EVENTS = Path(__file__).parents[2] / "events"
# The schedule and one forwarder event per function that takes them (the others differ only in detail-type).
SAMPLES = [
    json.loads((EVENTS / name).read_text())
    for name in (
        "scheduled-event.json",
        "forwarder/nodeclaim-deleting.json",
        "forwarder/ec2nodeclass-updated.json",
        "forwarder/pod-unschedulable.json",
    )
]
SOURCES = ["aws.events", FORWARDER_SOURCE, "aws.ec2", ""]
DETAIL_TYPE_VALUES = ["Scheduled Event", *DETAIL_TYPES, "scheduled event"]
LAST_SECOND = "9999-12-31T23:59:59Z"  # the last representable second: one more overflows
TIMES = st.sampled_from(
    [
        "2026-03-02T14:05:00Z",
        "2026-03-02T14:05:00",  # naive
        "2026-03-02T14:05:00.123456+05:30",
        LAST_SECOND,
        "0001-01-01T00:00:00Z",
        "1772460301",
        "not a time",
    ]
) | st.datetimes().map(datetime.isoformat)


@st.composite
def eventbridge_events(draw: st.DrawFn) -> Any:
    """Events close to the ones the functions take: a real sample with the fields that decide (source,
    detail-type, times, the forwarder's detail) redrawn, and then perhaps mutated."""
    event = copy.deepcopy(draw(st.sampled_from(SAMPLES)))
    if draw(st.booleans()):
        event["source"] = draw(st.sampled_from(SOURCES))
    if draw(st.booleans()):
        event["detail-type"] = draw(st.sampled_from(DETAIL_TYPE_VALUES))
    if draw(st.booleans()):
        event["time"] = draw(TIMES)
    detail = event.setdefault("detail", {})
    if draw(st.booleans()):
        detail["observedAt"] = draw(TIMES)
    if draw(st.booleans()):
        detail["cluster"] = draw(st.sampled_from(["memory", "demo", ""]))
    if draw(st.booleans()):
        event = draw(mutated(event, max_mutations=2))
    return event


# Lambda's direct (and EventBridge's) invocations carry any JSON payload; most are events of the right shape.
EVENTS_STRATEGY = eventbridge_events() | JSON


class PassReached(Exception):
    """Raised in place of a function's pass: the event got through the handler's checks."""


def reached(*_: Any, **__: Any) -> Any:
    raise PassReached


class Reached:
    """A controller whose every pass raises PassReached."""

    def __getattr__(self, _: str) -> Any:
        return reached


SWEPT = ("termination", "disruption", "garbage_collection", "nodeclass")  # the EventBridge-invoked handlers


@contextlib.contextmanager
def loaded_over_memory(names: Sequence[str], patch: pytest.MonkeyPatch) -> Iterator[dict[str, ModuleType]]:
    """The handlers ``names`` over an in-memory runtime whose EventBridge-invoked passes (``SWEPT``) are replaced by
    ``Reached``; the runtime is uninstalled after."""
    patch.setenv("POWERTOOLS_TRACE_DISABLED", "true")
    modules = {name: load_handler(name) for name in names}
    container = memory_runtime(MemoryCluster(), MemoryCloud())
    for name in SWEPT:
        setattr(container.controllers, name, Reached())
    runtime.install(container)
    try:
        yield modules
    finally:
        runtime.install(None)


@pytest.fixture(scope="module")
def handlers() -> Iterator[dict[str, ModuleType]]:
    """Each EventBridge-invoked handler over an in-memory runtime, its pass replaced by ``reached``."""
    with pytest.MonkeyPatch.context() as patch, loaded_over_memory(SWEPT, patch) as modules:
        yield modules


def invoke(module: ModuleType, event: Any) -> dict[str, Any] | None:
    """The handler's answer, or None when the event reached the pass."""
    try:
        answer = module.handler(event, Context())
    except PassReached:
        return None
    assert isinstance(answer, dict)
    return answer


def is_scheduled(event: Any) -> bool:
    return (
        isinstance(event, dict)
        and event.get("source") == "aws.events"
        and event.get("detail-type") == "Scheduled Event"
    )


@fuzz(150)
@given(EVENTS_STRATEGY)
def test_termination_skips_or_sweeps_any_event(handlers: dict[str, ModuleType], event: Any) -> None:
    """Termination sweeps on a schedule or a forwarder event and skips anything else, never raising."""
    answer = invoke(handlers["termination"], event)
    if answer is None:
        assert isinstance(event, dict)
        assert event.get("source") in ("aws.events", FORWARDER_SOURCE)
    else:
        assert answer == {"skipped": True}


@fuzz(100)
@given(EVENTS_STRATEGY)
@pytest.mark.parametrize("name", ["disruption", "garbage_collection"])
def test_scheduled_functions_skip_or_pass_on_any_event(handlers: dict[str, ModuleType], name: str, event: Any) -> None:
    """Disruption and garbage collection pass only on an EventBridge schedule; anything else is a skip with its
    reason, never an exception."""
    answer = invoke(handlers[name], event)
    if answer is None:
        assert is_scheduled(event)
    else:
        assert answer == {"skipped": "not an EventBridge scheduled event"}


@fuzz(150)
@given(EVENTS_STRATEGY)
def test_nodeclass_skips_or_reconciles_any_event(handlers: dict[str, ModuleType], event: Any) -> None:
    """The nodeclass function reconciles on a schedule or on this cluster's EC2NodeClass events, and skips
    (with a reason) other clusters' events and anything else, never raising."""
    answer = invoke(handlers["nodeclass"], event)
    if answer is None:
        assert isinstance(event, dict)
        assert is_scheduled(event) or (event.get("detail") or {}).get("cluster") == "memory"
    else:
        assert set(answer) == {"skipped"} and answer["skipped"].strip()


# --- the provisioner: pure parsing ------------------------------------------------------------------------------
class CountedMetrics:
    """Stands in for the provisioner's Powertools metrics: which counters a record bumped."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def add_metric(self, name: str, unit: Any, value: float) -> None:
        self.names.append(name)


@pytest.fixture(scope="module")
def provisioner() -> Iterator[ModuleType]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("POWERTOOLS_TRACE_DISABLED", "true")
        module = load_handler("provisioner")
        patch.setattr(module, "tools", dataclasses.replace(module.tools, metrics=CountedMetrics()))
        yield module


LAST_PASS = datetime(2026, 3, 2, 14, 5, tzinfo=UTC)
SCHEDULED_AT_THE_END = {**SAMPLES[0], "time": LAST_SECOND}
FORWARDED_AT_THE_END = {**SAMPLES[1], "detail": {**SAMPLES[1]["detail"], "observedAt": LAST_SECOND}}
FORWARDED_NAIVE = {**SAMPLES[1], "detail": {**SAMPLES[1]["detail"], "observedAt": "2026-03-02T14:05:00"}}


@fuzz(300)
@given(EVENTS_STRATEGY)
@example(SCHEDULED_AT_THE_END)
@example(FORWARDED_AT_THE_END)
@example(FORWARDED_NAIVE)
def test_provisioner_trigger_is_an_aware_time_none_or_a_validation_error(provisioner: ModuleType, event: Any) -> None:
    """``trigger`` answers a (timezone-aware time, event id) pair, None, or a ValidationError with its errors;
    never another exception, and never a naive time (the skip rule compares it with an aware one)."""
    try:
        found = provisioner.trigger(event)
    except ValidationError as error:
        assert error.errors()
        return
    if found is not None:
        when, event_id = found.time, found.event_id
        assert isinstance(event_id, str)
        assert when.tzinfo is not None and when.utcoffset() is not None, found
        already_handled([when], LAST_PASS)  # the skip rule takes any trigger time without raising


SQS_TEMPLATE = {
    "messageId": "00000000-0000-4000-8000-000000000001",
    "receiptHandle": "AQEB",
    "attributes": {"ApproximateReceiveCount": "1", "SentTimestamp": "1772460301000", "MessageGroupId": "passes"},
    "messageAttributes": {},
    "md5OfBody": "0",
    "eventSource": "aws:sqs",
    "eventSourceARN": "arn:aws:sqs:us-west-2:111122223333:provisioning.fifo",
    "awsRegion": "us-west-2",
}
BODIES = (
    eventbridge_events().map(json.dumps) | JSON.map(json.dumps) | st.text(max_size=50) | TRICKY_TEXT | DEEP_JSON_TEXT
)


@fuzz(300)
@given(BODIES)
@example(json.dumps(SCHEDULED_AT_THE_END))
@example("[" * 5_000 + "]" * 5_000)
def test_provisioner_batch_records_are_taken_skipped_or_unreadable(provisioner: ModuleType, body: str) -> None:
    """A provisioning queue record with any body is taken as a trigger, skipped (and counted as such), or fails as
    unreadable: a batch item failure (released, so it is dead-lettered) that is counted, with a reason; reading
    never raises."""
    counted = provisioner.tools.metrics.names
    counted.clear()
    record = {**SQS_TEMPLATE, "body": body}
    batch = provisioner.read(SqsBatch.model_validate({"Records": [record]}))
    if batch.failed:
        assert batch.failed[record["messageId"]].strip()
        assert counted == [shared_metrics.PROVISIONER_UNREADABLE_MESSAGES], "not counted"
        assert not batch.items and [r.message_id for r in batch.unreadable] == [record["messageId"]]
        return
    assert len(batch.items) <= 1 and counted == ([] if batch.items else [shared_metrics.SKIPPED_EVENTS])
