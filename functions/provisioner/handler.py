"""Provisioner λ: one reconcile pass per batch of the provisioning queue (docs/provisioning.md).

The queue (FIFO, one message group: passes never overlap) carries the forwarder's cluster events and the
one-minute sweep, both EventBridge events. Each batch runs one whole-cluster pass (provisioning, then the
lifecycle of every NodeClaim that needs a step, then NodePool status) unless every event in it predates the
start of the last completed pass (the FIFO skip rule). Only records that are not EventBridge events at all
are reported as failures; they are made visible again at once, so that they reach the dead-letter queue
without holding up the message group. A pass that fails is logged and counted, and the batch acknowledged:
the next sweep, at most a minute away, passes again, whereas a failed batch would block the group for the
whole visibility timeout.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import AwareDatetime, BaseModel, Field, ValidationError

from autoscaler import metrics as shared_metrics
from autoscaler import runtime
from autoscaler.cloudprovider.errors import CloudProviderError
from autoscaler.controllers.batch_skip import InMemoryLastPass, LastPassStore, already_handled, trigger_time
from autoscaler.controllers.provisioner_pass import ProvisionerPass
from autoscaler.controllers.state import NodeClassIndex
from autoscaler.providers.aws.lastpass import DynamoDBLastPass
from autoscaler.providers.aws.provider import AWSCloudProvider
from autoscaler.routing import FORWARDER_SOURCE

tools = runtime.powertools("provisioner")
logger, tracer, metrics = tools.logger, tools.tracer, tools.metrics


class Envelope(BaseModel):
    """An EventBridge event, as far as a pass needs it: which event, from whom, when. (Powertools'
    EventBridgeModel also requires fields the pass never reads, such as ``account``.)"""

    id: str
    source: str
    detail_type: str = Field(alias="detail-type")
    time: AwareDatetime  # aware, as EventBridge writes it: the skip rule compares it with the last pass's start
    detail: dict[str, Any] = Field(default_factory=dict)


class ForwarderDetail(BaseModel):
    """The forwarder's ``detail`` (docs/events.md); the pass reads the cluster, so only the time matters."""

    version: str
    observed_at: AwareDatetime = Field(alias="observedAt")


class ScheduledEvent(Envelope):
    source: Literal["aws.events"]
    detail_type: Literal["Scheduled Event"] = Field(alias="detail-type")


@dataclass
class Provisioner:
    """What a warm execution environment keeps between invocations."""

    reconciler: ProvisionerPass
    last_pass: LastPassStore
    queue_client: Any = None  # SQS, to hand unreadable messages back at once
    cloud: Any = None  # the cloud provider (kept for its caches, and for tests to look at)


def build(rt: runtime.Runtime, instance_type_names: Sequence[str] = ()) -> Provisioner:
    """The pass over this container's adapters. Its cloud provider reads EC2NodeClasses from the pass's own read
    of the cluster (not one request per NodeClaim); ``instance_type_names`` limits the catalogue (tests)."""
    nodeclasses = NodeClassIndex()
    clients = rt.cloud.clients
    cloud = AWSCloudProvider(
        rt.settings,
        nodeclasses.get,
        clients=clients,
        unavailable=rt.cloud.unavailable,
        instance_type_names=instance_type_names,
        clock=rt.clock,
    )
    reconciler = ProvisionerPass(
        rt.cluster,
        cloud,
        cloud.unavailable,
        nodeclasses=nodeclasses,
        clock=rt.clock,
        feature_gates=rt.settings.feature_gates,
    )
    table = rt.settings.state_table_name
    store: LastPassStore = DynamoDBLastPass(clients, table) if table else InMemoryLastPass()
    return Provisioner(reconciler, store, clients.sqs, cloud)


# Built on the first invocation for this container's runtime; tests replace the factory.
factory: Callable[[runtime.Runtime], Provisioner] = build
_built: dict[int, Provisioner] = {}


def _provisioner() -> Provisioner:
    rt = runtime.current()
    if id(rt) not in _built:
        _built.clear()
        _built[id(rt)] = factory(rt)
    return _built[id(rt)]


def trigger(event: Any) -> tuple[datetime, str] | None:
    """When an EventBridge event asks for a pass (and its id), or None for an event we do not take.
    Raises ValidationError when it is not an EventBridge event at all."""
    envelope = Envelope.model_validate(event)
    if envelope.source == FORWARDER_SOURCE:
        try:
            detail = ForwarderDetail.model_validate(envelope.detail)
        except ValidationError:
            return None
        return trigger_time(envelope.time, detail.observed_at), envelope.id
    try:
        ScheduledEvent.model_validate(event)
    except ValidationError:
        return None
    return trigger_time(envelope.time), envelope.id


class _Batch:
    """The triggers of one SQS batch, collected by the batch processor's record handler."""

    def __init__(self) -> None:
        self.triggers: list[tuple[datetime, str]] = []

    def record(self, record: SQSRecord) -> None:
        try:
            found = trigger(record.json_body)
        except (ValidationError, ValueError, RecursionError, OverflowError) as error:  # too deep, or year 9999
            logger.warning("unreadable message", extra={"message_id": record.message_id, "error": str(error)[:512]})
            metrics.add_metric(shared_metrics.PROVISIONER_UNREADABLE_MESSAGES, MetricUnit.Count, 1)
            raise  # a batch item failure: it goes to the dead-letter queue
        if found is None:
            tools.skip("an EventBridge event that asks for no pass", message_id=record.message_id)
            return
        self.triggers.append(found)


def _release(failures: list[dict[str, str]], event: dict[str, Any], provisioner: Provisioner) -> None:
    """Make failed messages visible again now: a FIFO group waits while any of its messages is in flight."""
    failed = {f["itemIdentifier"] for f in failures}
    for record in event.get("Records", []):
        if record.get("messageId") not in failed or provisioner.queue_client is None:
            continue
        account, name = record["eventSourceARN"].split(":")[4:6]
        try:
            url = provisioner.queue_client.get_queue_url(QueueName=name, QueueOwnerAWSAccountId=account)["QueueUrl"]
            provisioner.queue_client.change_message_visibility(
                QueueUrl=url, ReceiptHandle=record["receiptHandle"], VisibilityTimeout=0
            )
        except Exception as error:  # only a speed-up: the visibility timeout releases it anyway
            logger.warning("could not release an unreadable message", extra={"error": str(error)})


@tracer.capture_method
def run_pass(triggers: list[tuple[datetime, str]], context: LambdaContext) -> dict[str, Any]:
    provisioner = _provisioner()
    try:
        last = provisioner.last_pass.started_at()
    except CloudProviderError as error:
        logger.warning("the last pass is unknown; passing anyway", extra={"error": str(error)})
        last = None
    if already_handled((t for t, _ in triggers), last):
        logger.info("batch already handled by the last pass", extra={"triggers": len(triggers), "last_pass": str(last)})
        metrics.add_metric(shared_metrics.PROVISIONER_SKIPPED_BATCHES, MetricUnit.Count, 1)
        return {"skipped": "every event predates the last completed pass"}
    logger.set_correlation_id(triggers[0][1])
    try:
        result = provisioner.reconciler.run(lambda: context.get_remaining_time_in_millis() / 1000, since=last)
    except Exception:
        logger.exception("the pass failed; the next sweep passes again", extra={"triggers": [i for _, i in triggers]})
        metrics.add_metric(shared_metrics.PROVISIONER_FAILED_PASSES, MetricUnit.Count, 1)
        return {"failed": True}
    try:
        provisioner.last_pass.record(result.started_at)
    except CloudProviderError as error:
        logger.warning("could not record the pass", extra={"error": str(error)})
    tools.publish(result.metric_points())
    summary = result.summary()
    logger.info("provisioning pass", extra={**summary, "triggers": [i for _, i in triggers]})
    return summary


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    if "Records" not in event:  # invoked directly with one EventBridge event (a manual or test invocation)
        try:
            found = trigger(event)
        except ValidationError as error:
            raise ValueError(f"provisioner: expected an SQS batch or an EventBridge event: {error}") from error
        metrics.add_metric(shared_metrics.PROVISIONER_TRIGGERS, MetricUnit.Count, 1 if found else 0)
        return {"pass": run_pass([found], context) if found else {"skipped": "not a provisioning trigger"}}
    batch = _Batch()
    # A batch of nothing but unreadable messages is still answered item by item: failing the invocation
    # would hold the whole message group for the visibility timeout.
    processor = BatchProcessor(EventType.SQS, raise_on_entire_batch_failure=False)
    response = process_partial_response(event, batch.record, processor, context)
    failures = list(response.get("batchItemFailures", []))
    if failures:
        _release(failures, event, _provisioner())
    metrics.add_metric(shared_metrics.PROVISIONER_TRIGGERS, MetricUnit.Count, len(batch.triggers))
    outcome = run_pass(batch.triggers, context) if batch.triggers else {"skipped": "no provisioning trigger"}
    return {"batchItemFailures": failures, "pass": outcome}
