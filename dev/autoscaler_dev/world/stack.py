"""The stack's queues, rules and table, created in the moto world as ``cdk deploy`` creates them in an account.

The routing is ``autoscaler.routing``'s, the one the CDK constructs use: the custom bus of cluster events with its
rules to the provisioning FIFO queue (one message group), to the termination and to the nodeclass functions; the
interruption rules on the default bus (``routing.INTERRUPTION_RULES``) to the interruption queue; dead-letter queues;
the state table. moto delivers EventBridge events to SQS targets for real but cannot invoke our functions, so each
rule that targets a function here targets an inbox queue instead, which the simulation drains into the function's
handler.

Each queue redelivers as the stack's does (``routing.Redelivery``: its visibility timeout and ``maxReceiveCount``),
with the visibility timeout kept in virtual time: moto's clock is the wall's, so the world receives with a long
visibility and hands a message back when its virtual timeout is over (``autoscaler_dev.world.redelivery``); SQS
moves it to the dead-letter queue on the receive after ``maxReceiveCount``, as in an account.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from autoscaler import routing
from autoscaler.events import FORWARDER_SOURCE
from autoscaler.settings import STATE_TABLE_KEY, STATE_TABLE_TTL
from autoscaler_dev.world.aws_world import CLUSTER, AWSWorld

# The inboxes stand in for Lambda targets: what reaches them is taken at once, and never redelivered.
INBOX = routing.Redelivery(visibility_seconds=0, max_receives=3)


@dataclass(frozen=True)
class Queue:
    url: str
    arn: str
    dead_letters_url: str
    redelivery: routing.Redelivery

    @property
    def name(self) -> str:
        return self.url.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class StackResources:
    bus: str
    provisioning: Queue
    interruption: Queue
    termination_inbox: Queue
    nodeclass_inbox: Queue
    table: str

    @classmethod
    def create(cls, aws: AWSWorld, cluster: str = CLUSTER) -> StackResources:
        sqs, events = aws.client("sqs"), aws.client("events")
        bus = routing.bus_name(cluster)
        events.create_event_bus(Name=bus)
        provisioning = _queue(sqs, f"{bus}-provisioning", routing.PROVISIONING_REDELIVERY, fifo=True)
        interruption = _queue(sqs, f"{bus}-interruption", routing.INTERRUPTION_REDELIVERY)
        termination = _queue(sqs, f"{bus}-termination-inbox", INBOX)
        nodeclass = _queue(sqs, f"{bus}-nodeclass-inbox", INBOX)
        destinations = (
            ("ToProvisioning", routing.PROVISIONING_DETAIL_TYPES, provisioning, routing.PROVISIONING_GROUP),
            ("ToTermination", routing.TERMINATION_DETAIL_TYPES, termination, None),
            ("ToNodeClass", routing.NODECLASS_DETAIL_TYPES, nodeclass, None),
        )
        for rule, detail_types, queue, group in destinations:
            pattern = {"source": [FORWARDER_SOURCE], "detail-type": list(detail_types)}
            events.put_rule(Name=rule, EventBusName=bus, EventPattern=json.dumps(pattern))
            target: dict[str, Any] = {"Id": "target", "Arn": queue.arn}
            if group:
                target["SqsParameters"] = {"MessageGroupId": group}
            events.put_targets(Rule=rule, EventBusName=bus, Targets=[target])
        for rule, (source, detail_type) in routing.INTERRUPTION_RULES.items():
            pattern = {"source": [source], "detail-type": [detail_type]}
            events.put_rule(Name=f"{bus}-{rule}", EventPattern=json.dumps(pattern))
            events.put_targets(Rule=f"{bus}-{rule}", Targets=[{"Id": "queue", "Arn": interruption.arn}])
        table = f"{bus}-state"
        dynamodb = aws.client("dynamodb")
        dynamodb.create_table(
            TableName=table,
            KeySchema=[{"AttributeName": STATE_TABLE_KEY, "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": STATE_TABLE_KEY, "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        dynamodb.update_time_to_live(
            TableName=table, TimeToLiveSpecification={"Enabled": True, "AttributeName": STATE_TABLE_TTL}
        )
        return cls(bus, provisioning, interruption, termination, nodeclass, table)

    def environment(self, aws: AWSWorld, kube_url: str, cluster: str = CLUSTER) -> dict[str, str]:
        """What the stack sets for every function (``autoscaler.settings``), pointed at the embedded world."""
        return {
            "CLUSTER_NAME": cluster,
            "AWS_REGION": "us-west-2",
            "AWS_ENDPOINT_URL": aws.endpoint,
            "CLUSTER_ENDPOINT": kube_url,  # plain http: the functions connect without EKS authentication
            "STATE_TABLE_NAME": self.table,
            "EVENT_BUS_NAME": self.bus,
            "INTERRUPTION_QUEUE_URL": self.interruption.url,
            "INTERRUPTION_DLQ_URL": self.interruption.dead_letters_url,
            "INTERRUPTION_MAX_RECEIVES": str(self.interruption.redelivery.max_receives),
            "ISOLATED_VPC": "true",  # moto has no Pricing API: the shipped price table
            "POWERTOOLS_TRACE_DISABLED": "true",
            "POWERTOOLS_METRICS_NAMESPACE": "ServerlessKarpenter",
        }


def _queue(sqs: Any, name: str, redelivery: routing.Redelivery, *, fifo: bool = False) -> Queue:
    suffix = ".fifo" if fifo else ""
    fifo_attributes = {"FifoQueue": "true", "ContentBasedDeduplication": "true"} if fifo else {}
    dead = sqs.create_queue(QueueName=f"{name}-dlq{suffix}", Attributes=fifo_attributes)["QueueUrl"]
    dead_arn = sqs.get_queue_attributes(QueueUrl=dead, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    redrive = json.dumps({"deadLetterTargetArn": dead_arn, "maxReceiveCount": str(redelivery.max_receives)})
    attributes = {**fifo_attributes, "VisibilityTimeout": "0", "RedrivePolicy": redrive}
    url = sqs.create_queue(QueueName=f"{name}{suffix}", Attributes=attributes)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    return Queue(url, arn, dead, redelivery)
