"""Fuzz the interruption queue's message parsing and its Lambda entry point.

Every SQS body, however broken, is classified as an action, a counted no-op or a malformed message with a
reason (which the dead-letter queue carries); and a whole SQS batch of such bodies through the real handler
returns a partial-batch response without raising.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from autoscaler import runtime
from autoscaler.controllers.interruption.messages import (
    CAPACITY_RESERVATION_INTERRUPTION_WARNING,
    HEALTH_EVENT,
    REBALANCE_RECOMMENDATION,
    SOURCE_EC2,
    SOURCE_HEALTH,
    SPOT_INTERRUPTION_WARNING,
    STATE_CHANGE_NOTIFICATION,
    Ignored,
    InterruptionMessage,
    Malformed,
    MalformedCode,
    is_instance_id,
    parse_body,
)
from autoscaler_dev.harness import Context, load_handler
from tests.fuzz.budget import fuzz
from tests.fuzz.strategies import JSON, TRICKY_TEXT, mutated
from tests.support.memory_cluster import MemoryCluster
from tests.support.memory_runtime import memory_runtime
from tests.unit.interruption.controller_support import RecordingDeadLetters

SAMPLES = Path(__file__).parents[2] / "events" / "interruption"
SQS_EVENTS = {path.stem: json.loads(path.read_text()) for path in sorted(SAMPLES.glob("*.json"))}
BODIES = {name: event["Records"][0]["body"] for name, event in SQS_EVENTS.items()}
DOCUMENTS = {name: json.loads(body) for name, body in BODIES.items() if name != "malformed-not-json"}


def assert_classified(body: str) -> None:
    """The one property of every body: exactly one verdict, and each verdict explains itself."""
    parsed = parse_body(body)
    assert isinstance(parsed, InterruptionMessage | Ignored | Malformed), parsed
    if isinstance(parsed, Malformed):
        assert isinstance(parsed.code, MalformedCode)
        assert parsed.detail.strip(), parsed
        assert parsed.reason.startswith(f"{parsed.code}: ")
    elif isinstance(parsed, Ignored):
        assert parsed.reason.strip(), parsed
    else:
        assert parsed.instance_ids, parsed
        assert all(is_instance_id(i) for i in parsed.instance_ids), parsed
        assert parsed.event_time.tzinfo is not None


ENVELOPE_KEYS = ("version", "id", "detail-type", "source", "account", "time", "region", "resources", "detail")
DETAIL_KEYS = (
    "instance-id",
    "instance-action",
    "state",
    "eventArn",
    "service",
    "eventTypeCode",
    "eventTypeCategory",
    "affectedEntities",
    "eventDescription",
)
KNOWN = st.sampled_from(
    [
        (SOURCE_EC2, SPOT_INTERRUPTION_WARNING),
        (SOURCE_EC2, CAPACITY_RESERVATION_INTERRUPTION_WARNING),
        (SOURCE_EC2, REBALANCE_RECOMMENDATION),
        (SOURCE_EC2, STATE_CHANGE_NOTIFICATION),
        (SOURCE_HEALTH, HEALTH_EVENT),
        (SOURCE_EC2, HEALTH_EVENT),
        ("aws.events", "Scheduled Event"),
    ]
)
FIELD_VALUES = (
    JSON
    | TRICKY_TEXT
    | st.sampled_from(
        [
            "0",
            "2026-03-02T14:05:00Z",
            "2026-03-02T14:05:00",  # naive: not an AwareDatetime
            "i-0a1b2c3d4e5f60001",
            "i-0A1B2C3D4E5F60001",
            "EC2",
            "scheduledChange",
            "stopping",
            "terminated",
            "running",
            [{"entityValue": "i-0a1b2c3d4e5f60001"}],
            [{"entityValue": None}],
            [{}],
        ]
    )
)


@st.composite
def eventbridge_shaped(draw: st.DrawFn) -> dict[str, Any]:
    """An EventBridge envelope for a source and detail-type we handle (or nearly), each field present or not,
    right or wrong, with a detail built the same way: the shapes closest to the real ones."""
    source, detail_type = draw(KNOWN)
    detail = {k: draw(FIELD_VALUES) for k in DETAIL_KEYS if draw(st.booleans())}
    event: dict[str, Any] = {k: draw(FIELD_VALUES) for k in ENVELOPE_KEYS if draw(st.booleans())}
    if draw(st.integers(0, 4)):  # mostly keep the fields that pick the model, so the detail gets validated
        event.update({"version": "0", "source": source, "detail-type": detail_type, "detail": detail})
    return event


@fuzz(300)
@given(st.text(max_size=300) | st.binary(max_size=100).map(lambda b: b.decode("latin-1")))
def test_any_text_is_classified(body: str) -> None:
    """Any text at all (mostly not JSON) is a verdict, never an exception."""
    assert_classified(body)


@fuzz(150)
@given(JSON)
def test_any_json_is_classified(document: Any) -> None:
    """Any JSON document (scalars, arrays, objects of any shape) is a verdict, never an exception."""
    assert_classified(json.dumps(document))


@fuzz(200)
@given(eventbridge_shaped())
def test_eventbridge_shaped_events_with_random_fields_are_classified(event: dict[str, Any]) -> None:
    """EventBridge envelopes of the handled detail-types with random, missing or wrongly-typed fields are a
    verdict with a reason, never an exception."""
    assert_classified(json.dumps(event))


@fuzz(250)
@given(st.sampled_from(sorted(DOCUMENTS)).flatmap(lambda name: mutated(DOCUMENTS[name])))
def test_mutated_real_events_are_classified(document: Any) -> None:
    """Each sample under events/interruption/ with fields dropped, retyped or randomised is a verdict."""
    assert_classified(json.dumps(document))


@fuzz(100)
@given(st.sampled_from(sorted(DOCUMENTS)), st.sampled_from(["nan", "inf", "dup", "deep", "surrogate"]))
def test_json_edge_encodings_are_classified(name: str, trick: str) -> None:
    """Bodies Python's json accepts but that are not strict JSON (NaN, duplicate keys, very deep nesting, lone
    surrogates) are still a verdict."""
    body = BODIES[name]
    if trick == "nan":
        body = body.replace('"version": "0"', '"version": NaN')
    elif trick == "inf":
        body = body.replace('"time": ', '"time": Infinity, "x": ')
    elif trick == "dup":
        body = body[:-1] + ', "detail": {"instance-id": 7}}'
    elif trick == "deep":
        body = "[" * 100_000 + "]" * 100_000
    else:
        body = body.replace('"id": "', '"id": "\\ud800')
    assert_classified(body)


# --- the whole handler --------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def interruption() -> Iterator[tuple[ModuleType, RecordingDeadLetters]]:
    """The real handler over an empty in-memory cluster (no instance is ours: valid messages are no-ops)."""
    module = load_handler("interruption")
    dead_letters = RecordingDeadLetters()
    runtime.install(memory_runtime(MemoryCluster(), dead_letters=dead_letters))
    yield module, dead_letters
    runtime.install(None)


TEMPLATE = SQS_EVENTS["spot-interruption-warning"]["Records"][0]
BODY_STRATEGY = (
    st.text(max_size=100)
    | JSON.map(json.dumps)
    | eventbridge_shaped().map(json.dumps)
    | st.sampled_from(sorted(DOCUMENTS)).flatmap(lambda name: mutated(DOCUMENTS[name])).map(json.dumps)
)


MESSAGE_ATTRIBUTES = st.dictionaries(
    st.text(min_size=1, max_size=10),
    st.fixed_dictionaries(
        {"stringValue": st.text(max_size=20), "dataType": st.sampled_from(["String", "Number", "String.x"])}
    ),
    max_size=2,
)


@st.composite
def sqs_records(draw: st.DrawFn) -> dict[str, Any]:
    """An SQS record as Lambda delivers it, random where a sender has a say: the body and the message
    attributes. (SQS fills every other field itself, so those are kept as the template has them.)"""
    return {
        **TEMPLATE,
        "messageId": str(draw(st.uuids())),
        "body": draw(BODY_STRATEGY),
        "messageAttributes": draw(MESSAGE_ATTRIBUTES),
    }


@fuzz(100)
@given(st.lists(sqs_records(), min_size=1, max_size=4))  # Lambda never sends an empty batch
def test_the_handler_answers_any_batch(
    interruption: tuple[ModuleType, RecordingDeadLetters], records: list[dict[str, Any]]
) -> None:
    """A batch of any bodies gets a partial-batch response, never an exception; malformed messages are
    dead-lettered with a reason, never retried (nothing in this empty cluster can fail transiently)."""
    module, dead_letters = interruption
    dead_letters.sent.clear()
    response = module.handler({"Records": records}, Context.of("interruption"))
    assert set(response) == {"batchItemFailures"}
    assert response["batchItemFailures"] == [], response
    assert all(reason.strip() for _, reason in dead_letters.sent)
