"""Proactive replacement end to end: a rebalance recommendation for a node of an opted-in NodePool goes through
the real interruption handler (which records it on the NodeClaim), then the real provisioner handler launches
the replacement. Kubernetes is the API emulator, AWS is moto, both over HTTP."""

from __future__ import annotations

import contextlib
import io
import json
import uuid
from collections.abc import Iterator

import pytest

from autoscaler.apis.v1 import labels as wk
from autoscaler.controllers.orchestration.record import CommandState, read_record, replaces
from autoscaler.controllers.rebalance.recommendation import (
    ANNOTATION_REBALANCE_POLICY,
    ANNOTATION_REBALANCE_RECOMMENDED_AT,
)
from autoscaler_dev.harness import Context, load_handler, sqs_record
from autoscaler_dev.world import interruptions
from autoscaler_dev.world.aws_world import REGION, AWSWorld
from tests.functional.provisioner.world import ProvisionerWorld


@pytest.fixture
def world(aws_world: AWSWorld, monkeypatch: pytest.MonkeyPatch) -> Iterator[ProvisionerWorld]:
    with ProvisionerWorld.start(aws_world, monkeypatch) as world:
        yield world


def recommend(world: ProvisionerWorld, instance_id: str) -> dict[str, object]:
    """The recommendation as EventBridge puts it on the interruption queue, handed to the real handler."""
    sqs = world.aws.client("sqs")
    url = sqs.create_queue(QueueName=f"interruption-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody=json.dumps(interruptions.rebalance_recommendation(instance_id)))
    (message,) = sqs.receive_message(QueueUrl=url, AttributeNames=["All"])["Messages"]
    handler = load_handler("interruption")
    with contextlib.redirect_stdout(io.StringIO()):
        result: dict[str, object] = handler.handler(
            {"Records": [sqs_record(message, url, REGION)]}, Context.of("interruption")
        )
    return result


def test_a_rebalance_recommendation_for_an_opted_in_nodepool_ends_with_a_replacement_launched(
    world: ProvisionerWorld,
) -> None:
    world.setup(capacity_types=("spot",))
    pool = world.kube.get(wk.API_VERSION, "NodePool", world.pool)
    assert pool is not None
    pool["metadata"]["annotations"] = {ANNOTATION_REBALANCE_POLICY: "Replace"}
    world.kube.apply(pool)
    pod = world.pending_pod("web-0", "1", "1Gi")
    world.publish("Pod Unschedulable", "web")
    world.drain()
    (old,) = world.nodeclaims()
    (node_name,) = world.join_all()
    bound = {**pod, "spec": {**pod["spec"], "nodeName": node_name}, "status": {"phase": "Running"}}
    world.kube.apply(bound)  # the kube-scheduler bound it
    world.publish("Node Created", "node", kind="Node")
    world.drain()
    assert old.status and old.status.provider_id
    instance_id = old.status.provider_id.rsplit("/", 1)[1]

    assert recommend(world, instance_id) == {"batchItemFailures": []}
    recorded = world.kube.get(wk.API_VERSION, "NodeClaim", old.name)
    assert recorded is not None and ANNOTATION_REBALANCE_RECOMMENDED_AT in recorded["metadata"]["annotations"]

    world.publish("NodeClaim Updated", old.name, kind="NodeClaim")  # the forwarder sees the annotation
    (result,) = world.drain()
    assert result["pass"]["rebalance"]["replacements_created"]
    by_name = {c.name: c for c in world.nodeclaims()}
    (new_name,) = result["pass"]["rebalance"]["replacements_created"]
    new = by_name[new_name]
    assert replaces(new) == (old.name,)
    record = read_record(by_name[old.name])
    assert record is not None and record.created == (new_name,) and record.state is CommandState.REPLACING
    assert new.status and new.status.provider_id  # launched by the same pass
    assert len(world.instances()) == 2
