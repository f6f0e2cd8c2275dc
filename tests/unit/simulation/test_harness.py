"""The Lambda harness: handlers loaded by path as fresh modules from the checkout (or a named directory), the
context Powertools reads, and SQS records as the event source mapping hands them over."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest

from autoscaler_dev import checkout, harness
from autoscaler_dev.harness import Context, load_handler
from autoscaler_dev.world import interruptions

ROOT = Path(__file__).resolve().parents[3]


def test_the_checkout_is_found_from_the_package_itself() -> None:
    assert checkout.root() == ROOT
    assert checkout.functions_dir() == ROOT / "functions"
    assert (checkout.events_dir() / "scheduled-event.json").is_file()


def test_outside_a_checkout_the_error_says_what_to_do(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("")  # a project, but not this one: no functions/ beside it
    with pytest.raises(
        checkout.CheckoutNotFoundError, match=r"install the dev package editable .* AUTOSCALER_FUNCTIONS_DIR"
    ):
        checkout.root(tmp_path / "site-packages" / "autoscaler_dev" / "checkout.py")


def test_a_named_functions_directory_is_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "functions" / "echo").mkdir(parents=True)
    (tmp_path / "functions" / "echo" / "handler.py").write_text(
        "calls = []\ndef handler(event, context):\n    return event\n"
    )
    monkeypatch.setenv(checkout.FUNCTIONS_DIR_VARIABLE, str(tmp_path / "functions"))
    assert checkout.events_dir() == tmp_path / "events"
    module = load_handler("echo")
    assert module.handler({"a": 1}, Context("echo")) == {"a": 1}
    assert sys.modules["echo_handler"] is module  # pydantic resolves the handler's annotations through it


def test_each_load_is_a_fresh_container(tmp_path: Path) -> None:
    (tmp_path / "counter").mkdir()
    (tmp_path / "counter" / "handler.py").write_text(
        "seen = []\ndef handler(event, context):\n    seen.append(event)\n"
    )
    first = load_handler("counter", tmp_path)
    first.handler(1, Context())
    second = load_handler("counter", tmp_path)
    assert second is not first and second.seen == [] and first.seen == [1]


def test_an_unknown_function_names_where_it_looked(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"no handler for function 'nope' at .*nope/handler\.py"):
        load_handler("nope", tmp_path)


def test_a_context_has_the_stack_timeout_a_fresh_request_id_and_an_arn() -> None:
    first, second = Context.of("provisioner"), Context.of("provisioner")
    assert first.get_remaining_time_in_millis() == 120_000
    assert Context.of("termination").get_remaining_time_in_millis() == 60_000
    assert first.aws_request_id != second.aws_request_id
    assert first.invoked_function_arn.endswith(":function:provisioner")
    assert Context("x", invoked_function_arn="arn:given").invoked_function_arn == "arn:given"


def test_sqs_records_carry_the_message_as_the_event_source_mapping_hands_it_over() -> None:
    message = {"MessageId": "m1", "ReceiptHandle": "r1", "Body": "{}", "MD5OfBody": "99914b932bd37a50b983c5e7c90ae93b"}
    record = harness.sqs_record(
        {**message, "Attributes": {"ApproximateReceiveCount": "2"}}, "arn:aws:sqs:eu-west-1:1:q"
    )
    assert record == {
        "messageId": "m1",
        "receiptHandle": "r1",
        "body": "{}",
        "attributes": {"ApproximateReceiveCount": "2"},
        "messageAttributes": {},
        "md5OfBody": "99914b932bd37a50b983c5e7c90ae93b",
        "eventSource": "aws:sqs",
        "eventSourceARN": "arn:aws:sqs:eu-west-1:1:q",
        "awsRegion": "eu-west-1",
    }
    built = interruptions.sqs_record("hello", message_id="m2", receive_count=3)  # a sample, without SQS
    assert (built["messageId"], built["body"], built["attributes"]["ApproximateReceiveCount"]) == ("m2", "hello", "3")
    assert built["md5OfBody"] == hashlib.md5(b"hello").hexdigest()
    assert built["eventSourceARN"] == interruptions.QUEUE_ARN and built["awsRegion"] == interruptions.REGION
