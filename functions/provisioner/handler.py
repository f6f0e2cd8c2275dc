"""Provisioner λ: one reconcile pass per batch of the provisioning queue (docs/provisioning.md).

The queue (FIFO, one message group; a batch handed over again while its pass still runs finds the provisioner
lease held and passes no second time) carries the forwarder's cluster events and the one-minute sweep, both
EventBridge events. Each batch runs one whole-cluster pass (provisioning, then the
lifecycle of every NodeClaim that needs a step, then NodePool status) unless every event in it predates the
start of the last completed pass (the FIFO skip rule, ``controllers.batch_skip``). Only records that are not
EventBridge events at all are reported as failures; they are made visible again at once, so that they reach the
dead-letter queue without holding up the message group. A pass that fails is logged, counted and acknowledged.
"""

from __future__ import annotations

import json
from typing import Any

from autoscaler import runtime
from autoscaler.controllers.batch_skip import Trigger
from autoscaler.events import ClusterEvent, ProvisionerRequest, ScheduledEvent, SqsBatch, provisioning_trigger
from autoscaler.metrics import PROVISIONER_UNREADABLE_MESSAGES
from autoscaler.powertools import Answer, Invocation, Records, powertools

tools = powertools("provisioner")


def trigger(event: Any) -> Trigger | None:
    """The pass ``event`` asks for, or None; a ValidationError when it is not an EventBridge event at all."""
    found = provisioning_trigger(event)
    return None if found is None else Trigger.of(found)


def read(batch: SqsBatch) -> Records[Trigger]:
    """The batch's triggers: a record that is not an EventBridge event is counted and fails alone."""
    ignored = "an EventBridge event that asks for no pass"
    return tools.records(
        batch, lambda r: trigger(json.loads(r.body)), counted=PROVISIONER_UNREADABLE_MESSAGES, ignored=ignored
    )


@tools.handler(ProvisionerRequest, reject="an SQS batch or an EventBridge event")
def handler(request: ProvisionerRequest, invocation: Invocation) -> Answer:
    rt, answer = runtime.current(), {}
    if isinstance(request, SqsBatch):
        batch = read(request)
        rt.redelivery.release(batch.unreadable)  # to the dead-letter queue now, not after the visibility timeout
        triggers, answer = batch.items, {"batchItemFailures": batch.failures()}
    else:  # one event, invoked directly (by hand, or by a test)
        triggers = [Trigger.of(request)] if isinstance(request, ClusterEvent | ScheduledEvent) else []
    tools.logger.set_correlation_id(triggers[0].event_id if triggers else None)
    outcome = rt.controllers.provisioner.run(triggers, invocation.request_id, invocation.time_left)
    logged = {**outcome.summary, "triggers": [t.event_id for t in triggers]}
    return Answer("provisioning pass", {**answer, "pass": outcome.summary}, outcome.points, logged)
