"""What feeds the functions: the interruption queue and its rules, the cluster bus, the FIFO provisioning queue,
the schedules. Patterns are stated literally here, so a typo in the stack cannot agree with itself."""

from __future__ import annotations

import json
from typing import Any

import pytest

from autoscaler import events as forwarder
from autoscaler import routing
from tests.infra.conftest import Synthesized

INTERRUPTION_PATTERNS = [
    {"source": ["aws.ec2"], "detail-type": ["EC2 Spot Instance Interruption Warning"]},
    {"source": ["aws.ec2"], "detail-type": ["EC2 Instance Rebalance Recommendation"]},
    {"source": ["aws.ec2"], "detail-type": ["EC2 Instance State-change Notification"]},
    {"source": ["aws.health"], "detail-type": ["AWS Health Event"]},
    {"source": ["aws.ec2"], "detail-type": ["EC2 Capacity Reservation Instance Interruption Warning"]},
]
FORWARDER = "serverless-karpenter.forwarder"


def _rules(synth: Synthesized) -> list[dict[str, Any]]:
    return [rule["Properties"] for rule in synth.of_type("AWS::Events::Rule").values()]


def _queue_policy(synth: Synthesized, queue: Any) -> list[dict[str, Any]]:
    return [
        statement
        for policy in synth.of_type("AWS::SQS::QueuePolicy").values()
        if synth.ref(queue) in policy["Properties"]["Queues"]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]


def test_interruption_rules_have_exact_patterns_on_the_default_bus(synth: Synthesized) -> None:
    queue_arn = synth.arn(synth.stack.interruption.queue)
    rules = [rule for rule in _rules(synth) if rule["Targets"][0]["Arn"] == queue_arn]

    def key(pattern: dict[str, Any]) -> str:
        return json.dumps(pattern, sort_keys=True)

    assert sorted((rule["EventPattern"] for rule in rules), key=key) == sorted(INTERRUPTION_PATTERNS, key=key)
    for rule in rules:
        assert "EventBusName" not in rule  # the account's default bus, where EC2 and Health publish
        assert len(rule["Targets"]) == 1


def test_interruption_queue_settings(synth: Synthesized) -> None:
    interruption = synth.stack.interruption
    queue = synth.props(interruption.queue)
    timeout = synth.props(synth.stack.functions["interruption"].function)["Timeout"]
    assert queue["MessageRetentionPeriod"] == 300
    assert queue["SqsManagedSseEnabled"] is True
    # A failed batch comes back within seconds of the function's timeout (a spot warning gives two minutes), and
    # the embedded world's queue redelivers with the same numbers.
    assert timeout <= queue["VisibilityTimeout"] <= timeout + 30
    redrive = queue["RedrivePolicy"]
    assert redrive["deadLetterTargetArn"] == synth.arn(interruption.dead_letters)
    assert redrive["maxReceiveCount"] * queue["VisibilityTimeout"] >= 180  # retried through a 2-minute outage
    expected = routing.INTERRUPTION_REDELIVERY
    assert queue["VisibilityTimeout"] == expected.visibility_seconds
    assert redrive["maxReceiveCount"] == expected.max_receives
    # A message must be able to reach the DLQ before it expires: receives come one visibility timeout apart.
    assert redrive["maxReceiveCount"] * queue["VisibilityTimeout"] < queue["MessageRetentionPeriod"]
    dlq = synth.props(interruption.dead_letters)
    assert dlq["SqsManagedSseEnabled"] is True
    assert dlq["MessageRetentionPeriod"] == 14 * 24 * 3600


def test_interruption_queue_policy(synth: Synthesized) -> None:
    statements = _queue_policy(synth, synth.stack.interruption.queue)
    send = [s for s in statements if s.get("Sid") == "EventsAndSqsMaySend"]
    assert send == [
        {
            "Sid": "EventsAndSqsMaySend",
            "Effect": "Allow",
            "Principal": {"Service": ["events.amazonaws.com", "sqs.amazonaws.com"]},
            "Action": "sqs:SendMessage",
            "Resource": synth.arn(synth.stack.interruption.queue),
            "Condition": {"StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}},
        }
    ]
    _assert_denies_plain_http(statements)


def _assert_denies_plain_http(statements: list[dict[str, Any]]) -> None:
    deny = [s for s in statements if s["Effect"] == "Deny"]
    assert len(deny) == 1
    assert deny[0]["Action"] == "sqs:*"
    assert deny[0]["Principal"] == {"AWS": "*"}
    assert deny[0]["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


@pytest.mark.parametrize("kind", ["interruption", "provisioning"])
def test_every_queue_and_dlq_is_encrypted_and_tls_only(synth: Synthesized, kind: str) -> None:
    owner = synth.stack.interruption if kind == "interruption" else synth.stack.cluster_events
    queues = (
        [owner.queue, owner.dead_letters]
        if kind == "interruption"
        else [owner.provisioning_queue, owner.provisioning_dead_letters]
    )
    for queue in queues:
        assert synth.props(queue)["SqsManagedSseEnabled"] is True
        _assert_denies_plain_http(_queue_policy(synth, queue))


def test_interruption_event_source_mapping(synth: Synthesized) -> None:
    mappings = [
        m["Properties"]
        for m in synth.of_type("AWS::Lambda::EventSourceMapping").values()
        if m["Properties"]["EventSourceArn"] == synth.arn(synth.stack.interruption.queue)
    ]
    assert len(mappings) == 1
    mapping = mappings[0]
    assert mapping["BatchSize"] == 10
    assert mapping["MaximumBatchingWindowInSeconds"] == 1
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert mapping["ScalingConfig"] == {"MaximumConcurrency": 5}


def test_cluster_bus_and_its_rules(synth: Synthesized) -> None:
    events = synth.stack.cluster_events
    assert synth.props(events.bus)["Name"] == "serverless-karpenter-demo"
    on_bus = [rule for rule in _rules(synth) if rule.get("EventBusName") == synth.ref(events.bus)]
    by_target = {str(rule["Targets"][0]["Arn"]): rule for rule in on_bus}
    assert len(on_bus) == 3
    provisioning = by_target[str(synth.arn(events.provisioning_queue))]
    assert provisioning["EventPattern"] == {
        "source": [FORWARDER],
        "detail-type": [
            "Pod Unschedulable",
            "NodePool Created",
            "NodePool Updated",
            "NodeClaim Created",
            "NodeClaim Updated",
            "NodeClaim Deleted",
            "Node Created",
            "Node Updated",
            "Node Deleted",
        ],
    }
    assert provisioning["Targets"][0]["SqsParameters"] == {"MessageGroupId": "provisioning"}
    termination = by_target[str(synth.ref(synth.stack.functions["termination"].alias))]
    assert termination["EventPattern"] == {
        "source": [FORWARDER],
        "detail-type": ["NodeClaim Deleting", "Node Deleting"],
    }
    nodeclass = by_target[str(synth.ref(synth.stack.functions["nodeclass"].alias))]
    assert nodeclass["EventPattern"] == {
        "source": [FORWARDER],
        "detail-type": ["EC2NodeClass Created", "EC2NodeClass Updated", "EC2NodeClass Deleting"],
    }
    # The rules speak the forwarder's language: its source and only detail-types it sends.
    routed = [t for rule in on_bus for t in rule["EventPattern"]["detail-type"]]
    assert set(routed) <= set(forwarder.DETAIL_TYPES)
    assert {rule["EventPattern"]["source"][0] for rule in on_bus} == {forwarder.FORWARDER_SOURCE}
    assert set(forwarder.DETAIL_TYPES) - set(routed) == {
        "Pod Capacity Freed",
        "NodePool Deleting",
        "NodePool Deleted",
        "EC2NodeClass Deleted",
    }


def test_provisioning_is_serialized_by_a_single_fifo_message_group(synth: Synthesized) -> None:
    events = synth.stack.cluster_events
    queue = synth.props(events.provisioning_queue)
    timeout = synth.props(synth.stack.functions["provisioner"].function)["Timeout"]
    assert queue["FifoQueue"] is True
    assert queue["ContentBasedDeduplication"] is True
    # A pass that is cut off holds the one message group until its visibility ends: the timeout and a margin.
    assert timeout <= queue["VisibilityTimeout"] <= timeout + 60
    assert queue["RedrivePolicy"]["deadLetterTargetArn"] == synth.arn(events.provisioning_dead_letters)
    assert queue["RedrivePolicy"]["maxReceiveCount"] >= 2
    expected = routing.PROVISIONING_REDELIVERY
    assert (queue["VisibilityTimeout"], queue["RedrivePolicy"]["maxReceiveCount"]) == (
        expected.visibility_seconds,
        expected.max_receives,
    )
    assert synth.props(events.provisioning_dead_letters)["FifoQueue"] is True
    # Every producer (cluster events and the sweep) uses the one message group, so passes never overlap.
    producers = [
        target
        for rule in _rules(synth)
        for target in rule["Targets"]
        if target["Arn"] == synth.arn(events.provisioning_queue)
    ]
    assert len(producers) == 2
    assert all(target["SqsParameters"] == {"MessageGroupId": "provisioning"} for target in producers)
    # No reserved concurrency behind a queue: it would throttle the SQS pollers and push messages to the DLQ.
    for name in ("provisioner", "interruption"):
        assert "ReservedConcurrentExecutions" not in synth.props(synth.stack.functions[name].function)
    (mapping,) = [
        m["Properties"]
        for m in synth.of_type("AWS::Lambda::EventSourceMapping").values()
        if m["Properties"]["EventSourceArn"] == synth.arn(events.provisioning_queue)
    ]
    assert mapping["BatchSize"] == 10
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert "MaximumBatchingWindowInSeconds" not in mapping  # FIFO sources do not support one


def test_schedules(synth: Synthesized) -> None:
    functions = synth.stack.functions
    expected = {
        str(synth.arn(synth.stack.cluster_events.provisioning_queue)): "rate(1 minute)",
        str(synth.ref(functions["termination"].alias)): "rate(1 minute)",
        str(synth.ref(functions["disruption"].alias)): "rate(5 minutes)",
        str(synth.ref(functions["garbage_collection"].alias)): "rate(2 minutes)",
        str(synth.ref(functions["nodeclass"].alias)): "rate(5 minutes)",
    }
    scheduled = {
        str(rule["Targets"][0]["Arn"]): rule["ScheduleExpression"]
        for rule in _rules(synth)
        if "ScheduleExpression" in rule
    }
    assert scheduled == expected


def test_schedule_override(variant: Synthesized) -> None:
    disruption = str(variant.ref(variant.stack.functions["disruption"].alias))
    scheduled = {
        str(rule["Targets"][0]["Arn"]): rule["ScheduleExpression"]
        for rule in _rules(variant)
        if "ScheduleExpression" in rule
    }
    assert scheduled[disruption] == "rate(10 minutes)"


def test_every_rule_and_event_source_is_live_by_default(synth: Synthesized) -> None:
    assert {rule["State"] for rule in _rules(synth)} == {"ENABLED"}
    for mapping in synth.of_type("AWS::Lambda::EventSourceMapping").values():
        assert mapping["Properties"].get("Enabled", True) is True


def test_paused_controllers_leave_only_the_conversion_webhook_live(variant: Synthesized) -> None:
    """-c controllersEnabled=false: deploy next to a running Karpenter without two controllers acting."""
    assert len(_rules(variant)) == 13
    assert {rule["State"] for rule in _rules(variant)} == {"DISABLED"}
    mappings = [m["Properties"] for m in variant.of_type("AWS::Lambda::EventSourceMapping").values()]
    assert [m["Enabled"] for m in mappings] == [False, False]
    (url,) = variant.of_type("AWS::Lambda::Url").values()
    assert url["Properties"]["AuthType"] == "NONE"
