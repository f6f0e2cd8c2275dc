"""The other pure inputs of a drain: volume attachments, the recorded deadline, and which objects terminate."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from autoscaler.apis.v1 import labels as wk
from autoscaler.controllers.state.nodes import taints_with_disrupted
from autoscaler.controllers.termination import (
    TerminationError,
    blocking_volume_attachments,
    terminating_pairs,
    termination_deadline,
)
from autoscaler.controllers.termination.deadline import deadline_to_record
from tests.unit.termination.builders import node, nodeclaim, pod

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def attachment(name: str, volume: str | None, node_name: str = "node-a") -> dict[str, Any]:
    source = {"persistentVolumeName": volume} if volume else {"inlineVolumeSpec": {}}
    return {"metadata": {"name": name}, "spec": {"nodeName": node_name, "source": source, "attacher": "ebs"}}


def claim(name: str, volume: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default"}, "spec": {"volumeName": volume}}


def test_volume_attachments_of_drained_pods_block_termination() -> None:
    attachments = [
        attachment("va-db", "pv-db"),
        attachment("va-inline", None),
        attachment("va-elsewhere", "pv-other", node_name="node-b"),
        attachment("va-static", "pv-static"),
        attachment("va-tolerant", "pv-tolerant"),
        attachment("va-ephemeral", "pv-scratch"),
    ]
    pods = [
        pod("etcd", static=True, volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "static-data"}}]),
        pod(
            "agent",
            tolerations=[{"operator": "Exists"}],
            volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "agent-data"}}],
        ),
        pod("cache", tolerations=[{"operator": "Exists"}], volumes=[{"name": "scratch", "ephemeral": {}}]),
    ]
    claims = [
        claim("static-data", "pv-static"),
        claim("agent-data", "pv-tolerant"),
        claim("cache-scratch", "pv-scratch"),
    ]
    blocking = blocking_volume_attachments("node-a", attachments, pods, claims, NOW)
    # The drained database's volume blocks; volumes of pods the drain leaves behind never would detach.
    assert blocking == ["va-db"]
    assert blocking_volume_attachments("node-a", [], pods, claims, NOW) == []


def test_the_deadline_is_recorded_once_from_the_deletion_time() -> None:
    claim_ = nodeclaim(grace="1h30m")
    assert deadline_to_record(claim_) is None  # not deleted yet
    claim_.metadata.deletion_timestamp = "2026-11-30T12:00:00Z"
    assert deadline_to_record(claim_) == "2026-11-30T13:30:00Z"
    claim_.metadata.annotations = {wk.ANNOTATION_TERMINATION_TIMESTAMP: "2026-11-30T13:00:00Z"}
    assert deadline_to_record(claim_) is None  # the first recorded value stands
    assert termination_deadline(claim_) == datetime(2026, 11, 30, 13, 0, tzinfo=UTC)
    assert termination_deadline(nodeclaim()) is None and termination_deadline(None) is None


def test_a_malformed_deadline_is_a_clear_error() -> None:
    claim_ = nodeclaim()
    claim_.metadata.annotations = {wk.ANNOTATION_TERMINATION_TIMESTAMP: "tomorrow"}
    with pytest.raises(TerminationError, match=r"default-a.*nodeclaim-termination-timestamp.*'tomorrow'"):
        termination_deadline(claim_)


def test_the_disrupted_taint_is_added_once_and_replaces_another_effect() -> None:
    plain = node()
    plain["spec"]["taints"] = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
    assert taints_with_disrupted(plain) == [
        {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
        {"key": wk.TAINT_DISRUPTED, "effect": "NoSchedule"},
    ]
    other_effect = node()
    other_effect["spec"]["taints"] = [{"key": wk.TAINT_DISRUPTED, "effect": "NoExecute"}]
    assert taints_with_disrupted(other_effect) == [{"key": wk.TAINT_DISRUPTED, "effect": "NoSchedule"}]
    done = node()
    done["spec"]["taints"] = [{"key": wk.TAINT_DISRUPTED, "effect": "NoSchedule"}]
    assert taints_with_disrupted(done) is None


def test_terminating_pairs_match_nodes_by_provider_id() -> None:
    deleted = nodeclaim("a", "aws:///us-east-1a/i-a")
    deleted.metadata.deletion_timestamp = "2026-11-30T12:00:00Z"
    untouched = nodeclaim("b", "aws:///us-east-1a/i-b", node_name="node-b")
    unlaunched = nodeclaim("c", None, node_name=None)
    unlaunched.metadata.deletion_timestamp = "2026-11-30T12:00:00Z"
    released = nodeclaim("d", "aws:///us-east-1a/i-d", node_name="node-d")
    released.metadata.deletion_timestamp, released.metadata.finalizers = "2026-11-30T12:00:00Z", []
    node_b = node("node-b", "aws:///us-east-1a/i-b")
    node_b["metadata"]["deletionTimestamp"] = "2026-11-30T12:00:00Z"
    orphan = node("node-x", "aws:///us-east-1a/i-x")
    orphan["metadata"]["deletionTimestamp"] = "2026-11-30T12:00:00Z"
    foreign = node("node-y", "aws:///us-east-1a/i-y", finalizers=())
    foreign["metadata"]["deletionTimestamp"] = "2026-11-30T12:00:00Z"
    nodes = [node("node-a", "aws:///us-east-1a/i-a"), node_b, orphan, foreign, node("node-d", "aws:///us-east-1a/i-d")]

    pairs = {
        (p.nodeclaim.name if p.nodeclaim else None, p.node["metadata"]["name"] if p.node else None)
        for p in terminating_pairs([deleted, untouched, unlaunched, released], nodes)
    }
    assert pairs == {("a", "node-a"), ("c", None), ("b", "node-b"), (None, "node-x")}
