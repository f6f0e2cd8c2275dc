"""Fuzz the path from the forwarder to the functions: what the in-cluster forwarder sends, as each target receives it.

Any history of watch events (the strategies of ``test_forwarder_changes``) goes through the real ``ChangeTracker``
and the real publisher's PutEvents entry, is wrapped as EventBridge delivers it (the envelope around the entry's
Detail, its Time in whole seconds), and reaches the functions its detail-type is routed to
(``autoscaler.routing``): the provisioner through its FIFO queue (an SQS record whose body is the event), the
termination and nodeclass functions directly. Every such event must be taken: a trigger of a provisioning pass
and no batch item failure, the termination sweep, the nodeclass pass (this cluster's). Then the scheduled events,
as the rules and the Step Functions fast sweep send them (``infra/constructs/fast_sweep.py``: its time is the
state's EnteredTime, with milliseconds), with any of their fields redrawn: each function passes on its schedule or
skips with a counted reason, never raising.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from autoscaler import metrics as shared_metrics
from autoscaler.events import SqsBatch
from autoscaler.forwarder.changes import BusEvent, ChangeTracker
from autoscaler.forwarder.publisher import EventBridgePublisher
from autoscaler.routing import NODECLASS_DETAIL_TYPES, PROVISIONING_DETAIL_TYPES, TERMINATION_DETAIL_TYPES
from tests.fuzz.budget import fuzz
from tests.fuzz.strategies import JSON
from tests.fuzz.test_forwarder_changes import histories
from tests.fuzz.test_handler_events import (
    SQS_TEMPLATE,
    SWEPT,
    CountedMetrics,
    invoke,
    is_scheduled,
    loaded_over_memory,
)

CLUSTER = "memory"  # the in-memory runtime's cluster name
T0 = datetime(2026, 3, 2, 14, 5, 7, 123456, tzinfo=UTC)


def delivered(entry: dict[str, Any], index: int) -> dict[str, Any]:
    """A PutEvents entry as EventBridge hands it to a rule's target."""
    when: datetime = entry["Time"]
    return {
        "version": "0",
        "id": f"00000000-0000-4000-8000-{index:012d}",
        "detail-type": entry["DetailType"],
        "source": entry["Source"],
        "account": "111122223333",
        "time": when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": "us-west-2",
        "resources": [],
        "detail": json.loads(entry["Detail"]),
    }


def forwarded(history: tuple[str, list[tuple[str | None, Any]]]) -> list[dict[str, Any]]:
    """Every event the forwarder sends for ``history``, as delivered."""
    kind, steps = history
    tracker = ChangeTracker(kind, CLUSTER, clock=lambda: T0)
    publisher = EventBridgePublisher(None, "bus")
    sent: list[BusEvent] = []
    for index, (watch_type, payload) in enumerate(steps):
        sent += (
            tracker.resync(payload, initial=index == 0) if watch_type is None else tracker.observe(watch_type, payload)
        )
    return [delivered(publisher.entry(event), index) for index, event in enumerate(sent)]


@pytest.fixture(scope="module")
def functions() -> Iterator[dict[str, ModuleType]]:
    """The provisioner (its metrics counted) and the EventBridge-invoked handlers over an in-memory runtime, every
    pass replaced by ``Reached``."""
    with pytest.MonkeyPatch.context() as patch, loaded_over_memory(("provisioner", *SWEPT), patch) as modules:
        provisioner = modules["provisioner"]
        patch.setattr(provisioner, "tools", dataclasses.replace(provisioner.tools, metrics=CountedMetrics()))
        yield modules


def records(bodies: list[str]) -> SqsBatch:
    return SqsBatch.model_validate(
        {"Records": [{**SQS_TEMPLATE, "messageId": f"m-{i}", "body": body} for i, body in enumerate(bodies)]}
    )


@fuzz(150)
@given(histories())
def test_every_event_the_forwarder_sends_is_taken_by_the_functions_it_is_routed_to(
    functions: dict[str, ModuleType], history: tuple[str, list[tuple[str | None, Any]]]
) -> None:
    events = forwarded(history)
    queued = [e for e in events if e["detail-type"] in PROVISIONING_DETAIL_TYPES]
    provisioner = functions["provisioner"]
    provisioner.tools.metrics.names.clear()
    batch = provisioner.read(records([json.dumps(e) for e in queued]))
    assert not batch.failed and len(batch.items) == len(queued), batch.failed
    assert provisioner.tools.metrics.names == []  # nothing skipped, nothing unreadable
    for event in events:
        if event["detail-type"] in TERMINATION_DETAIL_TYPES:
            assert invoke(functions["termination"], event) is None, event
        if event["detail-type"] in NODECLASS_DETAIL_TYPES:
            assert invoke(functions["nodeclass"], event) is None, event


RULE_SWEEP = {
    "version": "0",
    "id": "53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa",
    "detail-type": "Scheduled Event",
    "source": "aws.events",
    "account": "111122223333",
    "time": "2026-03-02T14:05:00Z",
    "region": "us-west-2",
    "resources": ["arn:aws:events:us-west-2:111122223333:rule/demo-TerminationSchedule"],
    "detail": {},
}
FAST_SWEEP = {
    **RULE_SWEEP,
    "time": "2026-03-02T14:05:07.123Z",  # $$.State.EnteredTime
    "resources": ["arn:aws:states:us-west-2:111122223333:stateMachine:FastSweepLoop"],
}
FIELDS = st.sampled_from(["version", "id", "detail-type", "source", "account", "time", "region", "resources", "detail"])
VALUES = JSON | st.sampled_from(
    ["Scheduled Event", "aws.events", "", "2026-03-02T14:05:00+00:00", "9999-12-31T23:59:59Z"]
)


@st.composite
def scheduled_events(draw: st.DrawFn) -> dict[str, Any]:
    """A schedule's event with some fields removed or redrawn."""
    event = copy.deepcopy(draw(st.sampled_from([RULE_SWEEP, FAST_SWEEP])))
    for field in draw(st.lists(FIELDS, max_size=3, unique=True)):
        if draw(st.booleans()):
            event.pop(field)
        else:
            event[field] = draw(VALUES)
    return event


@fuzz(120)
@given(scheduled_events())
def test_each_function_passes_on_its_schedule_or_skips_with_a_count(
    functions: dict[str, ModuleType], event: dict[str, Any]
) -> None:
    provisioner = functions["provisioner"]
    provisioner.tools.metrics.names.clear()
    batch = provisioner.read(records([json.dumps(event)]))
    counted = provisioner.tools.metrics.names
    if batch.items:
        assert not batch.failed and counted == []
    elif batch.failed:
        assert counted == [shared_metrics.PROVISIONER_UNREADABLE_MESSAGES]
    else:
        assert counted == [shared_metrics.SKIPPED_EVENTS]
    for name in SWEPT:
        answer = invoke(functions[name], event)
        if answer is None:
            assert is_scheduled(event), (name, event)
        else:
            assert set(answer) == {"skipped"} and answer["skipped"], (name, answer)


@pytest.mark.parametrize("event", [RULE_SWEEP, FAST_SWEEP], ids=["rule", "fast-sweep"])
def test_the_schedules_as_sent_are_taken_by_every_function(functions: dict[str, ModuleType], event: Any) -> None:
    assert len(functions["provisioner"].read(records([json.dumps(event)])).items) == 1
    for name in SWEPT:
        assert invoke(functions[name], event) is None, name
