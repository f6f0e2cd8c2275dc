"""The interruption function's world: moto over HTTP (the queue, its dead-letter queue, the state table) and
the Kubernetes API emulator over HTTP, with the real handler consuming the queue as Lambda would."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from types import ModuleType
from typing import Any

import pytest

from autoscaler import runtime
from autoscaler.apis.v1 import labels as wk
from autoscaler.cloudprovider.port import UnavailableOfferings
from autoscaler.kube.client import KubernetesCluster
from autoscaler.kube.connect import plain_client
from autoscaler.kube.rest import KubeRest, RetryPolicy
from autoscaler.providers.aws.clients import AWSClients
from autoscaler.providers.aws.unavailable import PARTITION_KEY, DynamoDBUnavailableOfferings
from autoscaler.settings import Settings
from autoscaler_dev.harness import Context, load_handler
from autoscaler_dev.kube_emulator.emulator import KubeEmulator
from autoscaler_dev.world.interruptions import provider_id
from tests.functional.interruption.event_source import EventSourceMapping
from tests.support.aws import CREDENTIALS, REGION, MotoEndpoint

CLUSTER = "interruption-test"
MAX_RECEIVE_COUNT = 3
NODEPOOL = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodePool",
    "metadata": {"name": "default"},
    "spec": {
        "template": {
            "spec": {
                "requirements": [{"key": wk.LABEL_CAPACITY_TYPE, "operator": "In", "values": ["spot"]}],
                "nodeClassRef": {"group": wk.AWS_GROUP, "kind": "EC2NodeClass", "name": "default"},
            }
        }
    },
}


def nodeclaim(name: str, instance_id: str, zone: str, nodepool: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {
            "name": name,
            "labels": {
                wk.LABEL_NODEPOOL: nodepool,
                wk.LABEL_ZONE: zone,
                wk.LABEL_INSTANCE_TYPE: "m5.large",
                wk.LABEL_CAPACITY_TYPE: "spot",
            },
            "finalizers": [wk.FINALIZER_TERMINATION],
        },
        "spec": {
            "requirements": [{"key": wk.LABEL_CAPACITY_TYPE, "operator": "In", "values": ["spot"]}],
            "nodeClassRef": {"group": wk.AWS_GROUP, "kind": "EC2NodeClass", "name": "default"},
        },
        "status": {"providerID": provider_id(instance_id, zone), "nodeName": f"node-{name}"},
    }


def node(name: str, instance_id: str, zone: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {wk.LABEL_ZONE: zone, wk.LABEL_HOSTNAME: name}},
        "spec": {"providerID": provider_id(instance_id, zone), "taints": [{"key": "team", "effect": "NoSchedule"}]},
    }


@dataclass
class InterruptionWorld:
    """One test's queue pair, state table, Kubernetes and handler."""

    kube: KubeEmulator
    clients: AWSClients
    queue_url: str
    dlq_url: str
    table: str
    handler: ModuleType
    offerings: UnavailableOfferings
    mapping: EventSourceMapping = field(init=False)

    def __post_init__(self) -> None:
        self.mapping = EventSourceMapping(
            self.clients.sqs, self.queue_url, self.handler.handler, Context.of("interruption")
        )

    def add_instance(self, name: str, instance_id: str, zone: str = "us-west-2a", nodepool: str = "default") -> None:
        self.kube.create(nodeclaim(name, instance_id, zone, nodepool))
        self.kube.create(node(f"node-{name}", instance_id, zone))

    def send(self, *bodies: dict[str, Any] | str) -> list[str]:
        """Put messages on the queue as EventBridge does; their SQS message ids."""
        sent = []
        for body in bodies:
            text = body if isinstance(body, str) else json.dumps(body)
            sent.append(self.clients.sqs.send_message(QueueUrl=self.queue_url, MessageBody=text)["MessageId"])
        return sent

    def new_container(self, *, dead_letters: bool = True, attempts: int = 2) -> None:
        """A new container's runtime as the function builds it from its environment (without the dead-letter
        queue when ``dead_letters`` is off), with short Kubernetes retries to keep tests fast."""
        rest = KubeRest(plain_client(self.kube.url), retry=RetryPolicy(attempts=attempts, base_delay=0.01))
        settings = Settings.from_env()
        if not dead_letters:
            settings = replace(settings, interruption_dlq_url="")
        runtime.install(runtime.Runtime.build(settings, cluster=KubernetesCluster(rest)))

    # --- observations ------------------------------------------------------------------------------
    def nodeclaim(self, name: str) -> dict[str, Any]:
        found = self.kube.get("karpenter.sh/v1", "NodeClaim", name)
        assert found is not None
        return found

    def node(self, name: str) -> dict[str, Any]:
        found = self.kube.get("v1", "Node", name)
        assert found is not None
        return found

    def events(self, kind: str, name: str) -> list[str]:
        return sorted(
            e["reason"]
            for e in self.kube.list("events.k8s.io/v1", "Event")
            if e["regarding"]["kind"] == kind and e["regarding"]["name"] == name
        )

    def queue_depth(self, url: str) -> int:
        attributes = self.clients.sqs.get_queue_attributes(
            QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
        )["Attributes"]
        return int(attributes["ApproximateNumberOfMessages"]) + int(attributes["ApproximateNumberOfMessagesNotVisible"])

    def dead_letters(self) -> list[dict[str, Any]]:
        received = self.clients.sqs.receive_message(
            QueueUrl=self.dlq_url, MaxNumberOfMessages=10, MessageAttributeNames=["All"], AttributeNames=["All"]
        )
        return list(received.get("Messages", []))

    def writes(self) -> dict[str, int]:
        return {k: v for k, v in self.kube.requests.items() if not k.startswith("GET")}


@pytest.fixture
def world(moto: MotoEndpoint, monkeypatch: pytest.MonkeyPatch) -> Iterator[InterruptionWorld]:
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "true")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", CREDENTIALS["aws_access_key_id"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", CREDENTIALS["aws_secret_access_key"])
    clients = AWSClients(REGION, moto.url)
    suffix = uuid.uuid4().hex[:8]
    dlq_url = clients.sqs.create_queue(QueueName=f"interruption-dlq-{suffix}")["QueueUrl"]
    dlq_arn = clients.sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    redrive = {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": str(MAX_RECEIVE_COUNT)}
    queue_url = clients.sqs.create_queue(
        QueueName=f"interruption-{suffix}",
        Attributes={"RedrivePolicy": json.dumps(redrive), "VisibilityTimeout": "30"},
    )["QueueUrl"]
    table = f"state-{suffix}"
    clients.dynamodb.create_table(
        TableName=table,
        AttributeDefinitions=[{"AttributeName": PARTITION_KEY, "AttributeType": "S"}],
        KeySchema=[{"AttributeName": PARTITION_KEY, "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
    )
    with KubeEmulator() as kube:
        kube.create(NODEPOOL)
        for name, value in {
            "CLUSTER_NAME": CLUSTER,
            "AWS_REGION": REGION,
            "AWS_ENDPOINT_URL": moto.url,
            "CLUSTER_ENDPOINT": kube.url,
            "STATE_TABLE_NAME": table,
            "INTERRUPTION_QUEUE_URL": queue_url,
            "INTERRUPTION_DLQ_URL": dlq_url,
        }.items():
            monkeypatch.setenv(name, value)
        handler = load_handler("interruption")
        offerings = DynamoDBUnavailableOfferings(clients, table)
        yield InterruptionWorld(kube, clients, queue_url, dlq_url, table, handler, offerings)
        runtime.install(None)
    for url in (queue_url, dlq_url):
        clients.sqs.delete_queue(QueueUrl=url)
    clients.dynamodb.delete_table(TableName=table)
