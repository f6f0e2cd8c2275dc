"""Parsing the interruption queue's messages: every shape AWS sends, the no-ops, and malformed input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autoscaler.controllers.interruption.messages import (
    Ignored,
    InterruptionMessage,
    Malformed,
    MalformedCode,
    MessageKind,
    parse_body,
)
from autoscaler_dev.world import interruptions as sample

SAMPLES = Path(__file__).parents[3] / "events" / "interruption"
A, B = "i-0a1b2c3d4e5f60001", "i-0a1b2c3d4e5f60002"


def sample_body(name: str) -> str:
    event = json.loads((SAMPLES / f"{name}.json").read_text())
    (record,) = event["Records"]
    return str(record["body"])


@pytest.mark.parametrize(
    ("name", "kind", "instance_ids", "note"),
    [
        ("spot-interruption-warning", MessageKind.SPOT_INTERRUPTION, (A,), "terminate"),
        ("capacity-reservation-interruption-warning", MessageKind.CAPACITY_RESERVATION_INTERRUPTION, (A,), "terminate"),
        ("rebalance-recommendation", MessageKind.REBALANCE_RECOMMENDATION, (A,), ""),
        ("instance-stopping", MessageKind.INSTANCE_STOPPED, (A,), "stopping"),
        ("instance-terminated", MessageKind.INSTANCE_TERMINATED, (A,), "terminated"),
        ("scheduled-change", MessageKind.SCHEDULED_CHANGE, (A, B), "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED"),
    ],
)
def test_each_sample_kind_parses_to_its_kind_and_instances(
    name: str, kind: MessageKind, instance_ids: tuple[str, ...], note: str
) -> None:
    parsed = parse_body(sample_body(name))
    assert isinstance(parsed, InterruptionMessage)
    assert (parsed.kind, parsed.instance_ids, parsed.note) == (kind, instance_ids, note)
    assert parsed.event_time.isoformat() == "2026-03-02T14:05:00+00:00"


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("ignored-instance-running", "instance state 'running' needs no action"),
        ("ignored-health-issue", "AWS Health EC2 issue events need no action"),
        ("ignored-unknown-detail-type", "unhandled event aws.ec2 / 'EC2 Instance Launch Successful'"),
    ],
)
def test_samples_we_do_not_act_on_are_no_ops_with_a_reason(name: str, reason: str) -> None:
    assert parse_body(sample_body(name)) == Ignored(reason)


@pytest.mark.parametrize(
    ("name", "code", "fragment"),
    [
        ("malformed-not-json", MalformedCode.NOT_JSON, "body is not JSON"),
        ("malformed-not-an-event", MalformedCode.NOT_AN_EVENT, "detail-type: Field required"),
        ("malformed-missing-instance-id", MalformedCode.INVALID_DETAIL, "instance-id: Field required"),
    ],
)
def test_malformed_samples_say_what_is_wrong(name: str, code: MalformedCode, fragment: str) -> None:
    parsed = parse_body(sample_body(name))
    assert isinstance(parsed, Malformed)
    assert parsed.code is code
    assert fragment in parsed.reason and parsed.reason.startswith(f"{code}: ")


@pytest.mark.parametrize(
    ("state", "kind"),
    [
        ("stopping", MessageKind.INSTANCE_STOPPED),
        ("stopped", MessageKind.INSTANCE_STOPPED),
        ("shutting-down", MessageKind.INSTANCE_TERMINATED),
        ("terminated", MessageKind.INSTANCE_TERMINATED),
        ("Terminated", MessageKind.INSTANCE_TERMINATED),
    ],
)
def test_state_changes_that_end_the_node(state: str, kind: MessageKind) -> None:
    parsed = parse_body(json.dumps(sample.state_change(A, state)))
    assert isinstance(parsed, InterruptionMessage) and parsed.kind is kind


@pytest.mark.parametrize("state", ["pending", "running"])
def test_other_states_are_ignored(state: str) -> None:
    assert isinstance(parse_body(json.dumps(sample.state_change(A, state))), Ignored)


def test_health_events_other_than_ec2_scheduled_changes_are_ignored() -> None:
    for event in (
        sample.scheduled_change([A], service="RDS"),
        sample.scheduled_change([A], category="accountNotification"),
    ):
        assert isinstance(parse_body(json.dumps(event)), Ignored)


def test_health_entities_that_are_not_instances_are_skipped() -> None:
    parsed = parse_body(json.dumps(sample.scheduled_change(["h-0123456789abcdef0", A, A])))
    assert isinstance(parsed, InterruptionMessage) and parsed.instance_ids == (A,)
    only_hosts = parse_body(json.dumps(sample.scheduled_change(["h-0123456789abcdef0"])))
    assert only_hosts == Ignored("AWS Health AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED names no EC2 instance")


def test_an_unsupported_eventbridge_version_is_a_no_op() -> None:
    event = {**sample.spot_interruption_warning(A), "version": "1"}
    assert isinstance(parse_body(json.dumps(event)), Ignored)


@pytest.mark.parametrize(
    ("mutate", "fragment"),
    [
        (lambda e: e["detail"].update({"instance-id": "i-NOT-HEX"}), "instance-id: String should match pattern"),
        (lambda e: e["detail"].update({"instance-id": 42}), "instance-id: Input should be a valid string"),
        (lambda e: e.update({"time": "yesterday"}), "time: Input should be a valid datetime"),
        (lambda e: e.update({"time": "2026-03-02T14:05:00"}), "time: Input should have timezone info"),
        (lambda e: e.pop("detail"), "detail: Field required"),
        (lambda e: e.update({"detail": ["i-0a1b2c3d4e5f60001"]}), "detail: Input should be a valid dictionary"),
    ],
)
def test_wrong_shapes_are_malformed(mutate: object, fragment: str) -> None:
    event = sample.spot_interruption_warning(A)
    mutate(event)  # type: ignore[operator]
    parsed = parse_body(json.dumps(event))
    assert isinstance(parsed, Malformed) and fragment in parsed.reason, parsed


def test_a_capacity_reservation_warning_without_an_instance_is_malformed_and_its_action_defaults() -> None:
    event = sample.capacity_reservation_interruption_warning(A)
    del event["detail"]["instance-action"]
    parsed = parse_body(json.dumps(event))
    assert isinstance(parsed, InterruptionMessage) and parsed.note == "terminate"
    del event["detail"]["instance-id"]
    parsed = parse_body(json.dumps(event))
    assert isinstance(parsed, Malformed) and parsed.code is MalformedCode.INVALID_DETAIL
    assert "EC2 Capacity Reservation Instance Interruption Warning: instance-id: Field required" in parsed.reason


def test_a_health_entity_without_a_value_is_malformed() -> None:
    event = sample.scheduled_change([A])
    event["detail"]["affectedEntities"] = [{"status": "PENDING"}]
    parsed = parse_body(json.dumps(event))
    assert isinstance(parsed, Malformed) and "affectedEntities.0.entityValue: Field required" in parsed.reason


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200) | json_values.map(json.dumps))
def test_any_body_is_classified_without_raising(body: str) -> None:
    assert isinstance(parse_body(body), InterruptionMessage | Ignored | Malformed)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(["instance-id", "instance-action", "state", "x"]), json_values, max_size=4))
def test_any_detail_of_a_known_event_is_classified_without_raising(detail: dict[str, object]) -> None:
    event = {**sample.spot_interruption_warning(A), "detail": detail}
    assert isinstance(parse_body(json.dumps(event)), InterruptionMessage | Malformed)
