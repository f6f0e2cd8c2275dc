"""A cluster for the provisioner function's end-to-end tests: the Kubernetes API emulator, the moto world,
and between them the real path of a cluster event: EventBridge -> the provisioning FIFO queue -> the real
handler, invoked with the batch as Lambda's SQS event source delivers it (and messages deleted as it would)."""

from __future__ import annotations

import contextlib
import io
import json
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from types import ModuleType
from typing import Any

import pytest

from autoscaler import runtime
from autoscaler.apis.v1 import labels as wk
from autoscaler.apis.v1.hashing import NODECLASS_HASH_VERSION, nodeclass_hash
from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.events import FORWARDER_SOURCE
from autoscaler.providers.aws.clients import AWSClients
from autoscaler.settings import LAST_PASS_ID, STATE_TABLE_KEY
from autoscaler_dev.harness import Context, load_handler, sqs_record
from autoscaler_dev.kube_emulator.emulator import KubeEmulator
from autoscaler_dev.world import kubelet
from autoscaler_dev.world.aws_world import ACCOUNT, CLUSTER, INSTANCE_TYPES, REGION, AWSWorld
from tests.support.lambdas import state_table
from tests.support.metrics import emf_records, metric_values


@dataclass
class ProvisionerWorld:
    aws: AWSWorld
    kube: KubeEmulator
    handler: ModuleType
    queue_url: str
    queue_arn: str
    bus: str
    table: str
    pool: str  # this test's NodePool name: instances are counted by it (the moto account is shared)
    emf: list[dict[str, Any]] = field(default_factory=list)
    batch: list[dict[str, Any]] = field(default_factory=list)  # the last batch delivered
    clients: AWSClients = field(init=False)  # every container's: tests hook them to shape EC2's answers

    def __post_init__(self) -> None:
        self.clients = self.aws.clients()

    @classmethod
    @contextlib.contextmanager
    def start(cls, aws: AWSWorld, monkeypatch: pytest.MonkeyPatch) -> Iterator[ProvisionerWorld]:
        suffix = uuid.uuid4().hex[:8]
        sqs, events = aws.client("sqs"), aws.client("events")
        queue_url = sqs.create_queue(
            QueueName=f"provisioning-{suffix}.fifo",
            Attributes={"FifoQueue": "true", "ContentBasedDeduplication": "true", "VisibilityTimeout": "720"},
        )["QueueUrl"]
        queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        bus = f"cluster-events-{suffix}"
        events.create_event_bus(Name=bus)
        events.put_rule(
            Name="to-provisioning", EventBusName=bus, EventPattern=json.dumps({"source": [FORWARDER_SOURCE]})
        )
        target = {"Id": "queue", "Arn": queue_arn, "SqsParameters": {"MessageGroupId": "provisioning"}}
        events.put_targets(Rule="to-provisioning", EventBusName=bus, Targets=[target])
        table = state_table(aws)
        with KubeEmulator() as kube:
            for name in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST"):
                monkeypatch.delenv(name, raising=False)
            environment = {
                "CLUSTER_NAME": CLUSTER,
                "AWS_REGION": REGION,
                "AWS_ENDPOINT_URL": aws.endpoint,
                "CLUSTER_ENDPOINT": kube.url,  # plain http: the handler connects without EKS auth
                "STATE_TABLE_NAME": table,
                "ISOLATED_VPC": "true",
                "POWERTOOLS_TRACE_DISABLED": "true",
                # The world's few instance types (a full catalogue takes moto seconds to describe).
                "INSTANCE_TYPES": ",".join(INSTANCE_TYPES),
            }
            for name, value in environment.items():
                monkeypatch.setenv(name, value)
            world = cls(aws, kube, load_handler("provisioner"), queue_url, queue_arn, bus, table, f"pool-{suffix}")
            world.new_execution_environment()  # this container's adapters, built from the environment above
            try:
                yield world
            finally:
                runtime.install(None)

    # --- the cluster -----------------------------------------------------------------------------------
    def setup(
        self, *, limits: Mapping[str, str] | None = None, capacity_types: tuple[str, ...] = ("on-demand",)
    ) -> None:
        """An EC2NodeClass resolved from the moto world (as the nodeclass function would leave it) and a NodePool."""
        nodeclass = self.aws.nodeclass(self.pool)
        annotations = {
            wk.ANNOTATION_NODECLASS_HASH: nodeclass_hash(nodeclass),
            wk.ANNOTATION_NODECLASS_HASH_VERSION: NODECLASS_HASH_VERSION,
        }
        body = nodeclass.to_dict()
        body["metadata"] = {"name": self.pool, "annotations": annotations}
        self.kube.create(body)
        spec: dict[str, Any] = {
            "template": {
                "metadata": {"labels": {"team": "web"}},
                "spec": {
                    "requirements": [
                        {"key": wk.LABEL_ARCH, "operator": "In", "values": ["amd64", "arm64"]},
                        {"key": wk.LABEL_CAPACITY_TYPE, "operator": "In", "values": list(capacity_types)},
                    ],
                    "nodeClassRef": {"group": wk.AWS_GROUP, "kind": "EC2NodeClass", "name": self.pool},
                    "expireAfter": "168h",
                },
            }
        }
        if limits:
            spec["limits"] = dict(limits)
        self.kube.create(
            {"apiVersion": wk.API_VERSION, "kind": "NodePool", "metadata": {"name": self.pool}, "spec": spec}
        )

    def pending_pod(
        self,
        name: str,
        cpu: str,
        memory: str,
        *,
        labels: Mapping[str, str] | None = None,
        node_selector: Mapping[str, str] | None = None,
        extra: Mapping[str, str] | None = None,
        affinity: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        requests = {"cpu": cpu, "memory": memory, **(extra or {})}
        spec: dict[str, Any] = {"containers": [{"name": "app", "image": "app", "resources": {"requests": requests}}]}
        if node_selector:
            spec["nodeSelector"] = dict(node_selector)
        if affinity:
            spec["affinity"] = dict(affinity)
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": dict(labels or {})},
            "spec": spec,
            "status": {
                "phase": "Pending",
                "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
            },
        }
        return self.kube.create(pod)

    def nodeclaims(self) -> list[NodeClaim]:
        return [NodeClaim.model_validate(c) for c in self.kube.list(wk.API_VERSION, "NodeClaim")]

    def events(self, reason: str) -> list[dict[str, Any]]:
        return [e for e in self.kube.list("events.k8s.io/v1", "Event") if e.get("reason") == reason]

    def join_all(self) -> list[str]:
        """Every launched NodeClaim's instance boots and its kubelet registers a Ready node."""
        names = []
        for claim in self.nodeclaims():
            if claim.status and claim.status.provider_id and not (claim.status.node_name):
                names.append(kubelet.join(self.kube, claim, REGION)["metadata"]["name"])
        return names

    # --- EC2 -----------------------------------------------------------------------------------------
    def instances(self) -> list[dict[str, Any]]:
        """Live instances of this test's NodePool."""
        pages = self.aws.client("ec2").describe_instances(
            Filters=[
                {"Name": f"tag:{wk.TAG_NODEPOOL}", "Values": [self.pool]},
                {"Name": "instance-state-name", "Values": ["pending", "running"]},
            ]
        )
        return [i for r in pages["Reservations"] for i in r["Instances"]]

    @property
    def runtime(self) -> runtime.Runtime:
        return runtime.current()

    # --- events and invocations ----------------------------------------------------------------------
    def publish(self, detail_type: str, name: str, kind: str = "Pod", count: int = 1, age: float = 0.0) -> None:
        """The forwarder puts ``count`` cluster events on the bus (the rule sends them to the FIFO queue), of
        changes it observed ``age`` seconds ago."""
        observed = datetime.now(UTC) - timedelta(seconds=age)
        entries = []
        for index in range(count):
            detail = {
                "version": "1",
                "cluster": CLUSTER,
                "change": detail_type.split(" ", 1)[1],
                "observedAt": observed.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                "object": {"apiVersion": "v1", "kind": kind, "name": f"{name}-{index}", "namespace": "default"},
            }
            entries.append(
                {
                    "Source": FORWARDER_SOURCE,
                    "DetailType": detail_type,
                    "Detail": json.dumps(detail),
                    "EventBusName": self.bus,
                }
            )
        for start in range(0, len(entries), 10):
            answer = self.aws.client("events").put_events(Entries=entries[start : start + 10])
            assert answer["FailedEntryCount"] == 0

    def sweep(self) -> None:
        """The one-minute schedule's event, sent to the queue as the stack's rule sends it."""
        event = {
            "version": "0",
            "id": str(uuid.uuid4()),
            "detail-type": "Scheduled Event",
            "source": "aws.events",
            "account": ACCOUNT,
            "time": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "region": REGION,
            "resources": [f"arn:aws:events:{REGION}:{ACCOUNT}:rule/provisioner-sweep"],
            "detail": {},
        }
        self.aws.client("sqs").send_message(
            QueueUrl=self.queue_url, MessageBody=json.dumps(event), MessageGroupId="provisioning"
        )

    def receive(self) -> list[dict[str, Any]]:
        messages = self.aws.client("sqs").receive_message(
            QueueUrl=self.queue_url, MaxNumberOfMessages=10, AttributeNames=["All"], WaitTimeSeconds=0
        )
        self.batch = [sqs_record(m, self.queue_arn, REGION) for m in messages.get("Messages", [])]
        return self.batch

    def invoke(self, records: list[dict[str, Any]] | None = None, *, ack: bool = True) -> dict[str, Any]:
        """Invoke the handler with a batch (the next one from the queue by default). Like Lambda, delete the
        messages the function did not report as failed (unless ``ack`` is False: a batch to deliver again),
        and nothing when the invocation died."""
        records = self.receive() if records is None else records
        printed = io.StringIO()
        try:
            with contextlib.redirect_stdout(printed):
                result: dict[str, Any] = self.handler.handler({"Records": records}, Context.of("provisioner"))
        finally:
            self.emf += emf_records(printed.getvalue())
        failed = {f["itemIdentifier"] for f in result.get("batchItemFailures", [])}
        sqs = self.aws.client("sqs")
        for record in records if ack else ():
            if record["messageId"] not in failed:
                sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=record["receiptHandle"])
        return result

    def drain(self) -> list[dict[str, Any]]:
        """Invoke with every batch waiting in the queue, as the event source would, one after another."""
        results = []
        while records := self.receive():
            results.append(self.invoke(records))
        return results

    def new_execution_environment(self) -> None:
        """A new container: its runtime built from the environment, over the world's AWS clients."""
        runtime.install(runtime.Runtime.build(clients=self.clients))

    def forget_last_pass(self) -> None:
        """The state table lost the last pass (or it expired): the next batch passes whatever its age."""
        self.aws.client("dynamodb").delete_item(TableName=self.table, Key={STATE_TABLE_KEY: {"S": LAST_PASS_ID}})

    def metric(self, name: str) -> float:
        """The sum of every value of ``name`` the handler printed."""
        return sum(metric_values(self.emf, name))
