"""The Cluster port's kubernetes-client adapter against the emulator over HTTP: every operation, pagination,
conflicts, throttling, timeouts and PDB-blocked evictions."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from autoscaler.apis.v1.nodeclaim import NodeClaim
from autoscaler.kube.client import KubernetesCluster
from autoscaler.kube.port import (
    ConflictError,
    Event,
    EvictionOutcome,
    NotFoundError,
    ObjectRef,
    RejectedError,
    TransientClusterError,
)
from autoscaler.kube.resources import KINDS
from autoscaler.kube.rest import KubeRest, RetryPolicy
from autoscaler_dev.kube_emulator.emulator import KubeEmulator
from autoscaler_dev.kube_emulator.server import Fault
from autoscaler_dev.world.faults import FaultRates, Faults
from tests.support.kube import node, nodeclaim, nodeclass, nodepool, pdb, pod, rest_for


def test_reads_karpenter_kinds_as_models_and_skips_invalid_ones(
    kube: KubeEmulator, cluster: KubernetesCluster, caplog: pytest.LogCaptureFixture
) -> None:
    kube.create(nodepool("default"))
    kube.create(nodeclass("default"))
    kube.create(nodeclaim("default-a"))
    broken = nodeclaim("default-b")
    kube.api.store.admission.clear()  # an object written before a rule existed
    kube.create({**broken, "spec": {**broken["spec"], "unknownField": 1}})
    assert [p.metadata.name for p in cluster.nodepools()] == ["default"]
    assert cluster.nodepools()[0].spec.disruption.consolidate_after == "0s"
    assert [c.metadata.name for c in cluster.nodeclasses()] == ["default"]
    assert [c.metadata.name for c in cluster.nodeclaims()] == ["default-a"]
    assert "skipping invalid NodeClaim" in caplog.text
    assert cluster.nodeclaim("default-a") is not None and cluster.nodeclaim("missing") is None
    assert cluster.nodepool("default") is not None and cluster.nodeclass("default") is not None


def test_create_nodeclaim_and_write_status(cluster: KubernetesCluster) -> None:
    claim = NodeClaim.model_validate({**nodeclaim(""), "metadata": {"generateName": "default-"}})
    created = cluster.create_nodeclaim(claim)
    assert created.metadata.name and created.metadata.name.startswith("default-") and created.metadata.uid
    updated = NodeClaim.model_validate({**created.to_dict(), "status": {"providerID": "aws:///us-west-2a/i-1"}})
    stored = cluster.write_status(updated)
    assert stored.status is not None and stored.status.provider_id == "aws:///us-west-2a/i-1"
    with pytest.raises(ConflictError):  # the version we wrote from is now stale
        cluster.write_status(updated)


def test_pending_pods_follow_the_port_definition(kube: KubeEmulator, cluster: KubernetesCluster) -> None:
    kube.create(pod("wanted", unschedulable=True))
    kube.create(pod("bound", node="n1"))
    kube.create(pod("daemon", unschedulable=True, owner_kind="DaemonSet"))
    kube.create(
        {
            **pod("gated", phase="Pending"),
            "status": {
                "phase": "Pending",
                "conditions": [{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}],
            },
        }
    )
    assert [p["metadata"]["name"] for p in cluster.pending_pods()] == ["wanted"]
    assert kube.requests["GET pods"] == 1  # one list, narrowed on the server


def test_pods_by_node_and_bound_pods(kube: KubeEmulator, cluster: KubernetesCluster) -> None:
    kube.create(pod("a", node="n1"))
    kube.create(pod("b", node="n2"))
    kube.create(pod("done", node="n1", phase="Succeeded"))
    kube.create(pod("pending", unschedulable=True))
    assert sorted(p["metadata"]["name"] for p in cluster.pods("n1")) == ["a", "done"]
    assert sorted(p["metadata"]["name"] for p in cluster.pods()) == ["a", "b"]


def test_core_lists(kube: KubeEmulator, cluster: KubernetesCluster) -> None:
    kube.create(node("n1"))
    kube.create(
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": "ds", "namespace": "kube-system"},
            "spec": {},
        }
    )
    kube.create(pdb("web", {"app": "web"}, min_available=1))
    kube.create({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"}, "spec": {}})
    kube.create({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv"}, "spec": {}})
    kube.create({"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment", "metadata": {"name": "va"}, "spec": {}})
    assert [n["metadata"]["name"] for n in cluster.nodes()] == ["n1"]
    assert [d["metadata"]["name"] for d in cluster.daemonsets()] == ["ds"]
    assert [p["metadata"]["name"] for p in cluster.pod_disruption_budgets()] == ["web"]
    assert [p["metadata"]["name"] for p in cluster.persistent_volume_claims()] == ["data"]
    assert [p["metadata"]["name"] for p in cluster.persistent_volumes()] == ["pv"]
    assert [v["metadata"]["name"] for v in cluster.volume_attachments()] == ["va"]
    assert cluster.get(ObjectRef("Node", "n1")) is not None and cluster.get(ObjectRef("Node", "gone")) is None


def test_lists_paginate(kube: KubeEmulator) -> None:
    for index in range(12):
        kube.create(node(f"n{index:02d}"))
    rest = rest_for(kube)
    items, version = rest.list(KINDS["Node"], limit=5)
    assert [n["metadata"]["name"] for n in items] == [f"n{i:02d}" for i in range(12)]
    assert version and kube.requests["GET nodes"] == 3


def test_a_list_whose_continuation_expires_is_listed_whole(kube: KubeEmulator) -> None:
    # Every continue token is too old (a busy cluster, compacted between pages): paging again would never end.
    for index in range(12):
        kube.create(node(f"n{index:02d}"))
    faults = Faults(FaultRates(continue_expired=1.0))
    faults.wrap_kube(kube.api)
    items, version = rest_for(kube).list(KINDS["Node"], limit=5)
    assert [n["metadata"]["name"] for n in items] == [f"n{i:02d}" for i in range(12)]
    assert version and faults.injected["continue_expired"] == 1


def test_patch_metadata_labels_annotations_finalizers_and_owners(
    kube: KubeEmulator, cluster: KubernetesCluster
) -> None:
    kube.create({**nodeclaim("nc"), "metadata": {"name": "nc", "labels": {"keep": "1", "drop": "2"}}})
    ref = ObjectRef("NodeClaim", "nc")
    cluster.patch_metadata(ref, labels={"drop": None, "new": "3"}, annotations={"a": "b"})
    cluster.patch_metadata(ref, add_finalizers=["karpenter.sh/termination", "other"])
    cluster.patch_metadata(
        ref,
        remove_finalizers=["other"],
        owner_references=[{"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "name": "p", "uid": "u"}],
    )
    metadata = kube.get("karpenter.sh/v1", "NodeClaim", "nc")["metadata"]  # type: ignore[index]
    assert metadata["labels"] == {"keep": "1", "new": "3"} and metadata["annotations"] == {"a": "b"}
    assert metadata["finalizers"] == ["karpenter.sh/termination"]
    assert metadata["ownerReferences"][0]["uid"] == "u"
    with pytest.raises(NotFoundError):
        cluster.patch_metadata(ObjectRef("NodeClaim", "missing"), add_finalizers=["x"])


def test_finalizer_changes_retry_conflicts_then_give_up(kube: KubeEmulator, cluster: KubernetesCluster) -> None:
    kube.create(node("n1"))
    kube.inject(Fault(409, "PATCH", "/nodes/n1", times=2))
    cluster.patch_metadata(ObjectRef("Node", "n1"), add_finalizers=["f"])
    assert kube.get("v1", "Node", "n1")["metadata"]["finalizers"] == ["f"]  # type: ignore[index]
    assert kube.requests["GET nodes"] == 3  # re-read after each conflict
    kube.inject(Fault(409, "PATCH", "/nodes/n1", times=10))
    with pytest.raises(ConflictError):
        cluster.patch_metadata(ObjectRef("Node", "n1"), remove_finalizers=["f"])


def test_taints_and_cordon(kube: KubeEmulator, cluster: KubernetesCluster) -> None:
    kube.create(node("n1"))
    taint = {"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}
    cluster.set_node_taints("n1", [taint])
    cluster.set_node_unschedulable("n1", True)
    spec = kube.get("v1", "Node", "n1")["spec"]  # type: ignore[index]
    assert spec["taints"] == [taint] and spec["unschedulable"] is True
    version = kube.get("v1", "Node", "n1")["metadata"]["resourceVersion"]  # type: ignore[index]
    cluster.set_node_taints("n1", [taint])  # already so: no write
    assert kube.get("v1", "Node", "n1")["metadata"]["resourceVersion"] == version  # type: ignore[index]
    cluster.set_node_unschedulable("n1", False)
    assert "unschedulable" not in kube.get("v1", "Node", "n1")["spec"]  # type: ignore[index]


def test_evictions_evicted_blocked_gone(kube: KubeEmulator, cluster: KubernetesCluster) -> None:
    for name in ("a", "b"):
        kube.create(pod(name, node="n1", labels={"app": "web"}))
    kube.create({**pdb("web", {"app": "web"}, max_unavailable=1), "status": {"expectedPods": 2}})
    assert cluster.evict("default", "a") is EvictionOutcome.EVICTED
    assert cluster.evict("default", "b") is EvictionOutcome.BLOCKED
    assert cluster.evict("default", "a") is EvictionOutcome.GONE
    kube.inject(Fault(429, "POST", "/eviction", times=1, retry_after=0))  # API throttling, not a budget: retried
    assert cluster.evict("default", "b") is EvictionOutcome.BLOCKED
    assert kube.get("v1", "Pod", "b") is not None


def test_delete_honours_uid_preconditions(kube: KubeEmulator, cluster: KubernetesCluster) -> None:
    created = kube.create(node("n1"))
    assert cluster.delete(ObjectRef("Node", "n1", uid="not-this-one")) is False  # a namesake is left alone
    assert kube.get("v1", "Node", "n1") is not None
    assert cluster.delete(ObjectRef("Node", "n1", uid=created["metadata"]["uid"]), grace_period_seconds=0) is True
    assert cluster.delete(ObjectRef("Node", "n1")) is False


def test_writes_whose_answer_is_not_read_still_happen_and_still_fail_typed(
    kube: KubeEmulator, kube_rest: KubeRest
) -> None:
    kube.create(node("n1"))
    assert kube_rest.delete(KINDS["Node"], "n1", answer=False) == {}  # done, its answer left undecoded
    assert kube.get("v1", "Node", "n1") is None
    with pytest.raises(NotFoundError):  # a failure is decoded into its typed error all the same
        kube_rest.delete(KINDS["Node"], "n1", answer=False)


def test_record_event_deduplicates_and_never_raises(kube: KubeEmulator, cluster: KubernetesCluster) -> None:
    regarding = ObjectRef("Pod", "web", "default", uid="u-1")
    cluster.record_event(Event(regarding, "Nominated", "Pod should schedule on: nodeclaim/default-x"))
    cluster.record_event(Event(regarding, "Nominated", "Pod should schedule on: nodeclaim/default-x"))
    cluster.record_event(Event(ObjectRef("NodeClaim", "nc"), "DisruptionBlocked", "blocked", "Warning"))
    events = kube.list("events.k8s.io/v1", "Event")
    assert [(e["reason"], e["regarding"]["kind"], e["metadata"]["namespace"]) for e in events] == [
        ("Nominated", "Pod", "default"),
        ("DisruptionBlocked", "NodeClaim", "default"),
    ]
    kube.inject(Fault(500, "POST", "/events", times=10))
    cluster.record_event(Event(regarding, "Other", "swallowed"))  # logged, not raised


def test_events_go_out_pipelined_on_one_connection_and_a_throttled_one_again_alone(
    kube: KubeEmulator, kube_rest: KubeRest
) -> None:
    cluster = KubernetesCluster(kube_rest)
    kube.inject(Fault(429, "POST", "/events", times=1, retry_after=0))
    opened = kube_rest.transport.opened if kube_rest.transport else 0
    cluster.record_events([Event(ObjectRef("Node", f"n{i}"), "Cordoned", "cordoned") for i in range(40)])
    names = sorted(e["regarding"]["name"] for e in kube.list("events.k8s.io/v1", "Event"))
    assert names == sorted(f"n{i}" for i in range(40))  # two pipelines (32 + 8), the throttled one sent again
    assert kube_rest.transport is not None and kube_rest.transport.opened - opened <= 1


def test_events_are_dated_by_the_runtimes_clock(kube: KubeEmulator, kube_rest: KubeRest) -> None:
    virtual = datetime(2031, 5, 4, 3, 2, 1, tzinfo=UTC)  # the embedded world's clock, say
    cluster = KubernetesCluster(kube_rest, now=lambda: virtual)
    cluster.record_event(Event(ObjectRef("Node", "n1"), "Cordoned", "cordoned"))
    (event,) = kube.list("events.k8s.io/v1", "Event")
    assert event["eventTime"] == "2031-05-04T03:02:01.000000Z"


def test_throttling_and_server_errors_are_retried_then_typed(kube: KubeEmulator, cluster: KubernetesCluster) -> None:
    kube.create(node("n1"))
    kube.inject(Fault(429, "GET", "/nodes", times=2, retry_after=0))
    kube.inject(Fault(503, "GET", "/nodes", times=1))
    assert len(cluster.nodes()) == 1
    kube.inject(Fault(500, "GET", "/nodes", times=10))
    with pytest.raises(TransientClusterError):
        cluster.nodes()


def test_timeouts_are_transient(kube: KubeEmulator) -> None:
    slow = KubernetesCluster(rest_for(kube, timeout=(1.0, 0.2), retry=RetryPolicy(attempts=2, base_delay=0.01)))
    kube.inject(Fault(0, "GET", "/nodes", times=2, delay=0.5))  # served, but after the client gave up
    with pytest.raises(TransientClusterError):
        slow.nodes()


def test_invalid_writes_are_rejected_not_retried(kube: KubeEmulator, cluster: KubernetesCluster) -> None:
    kube.create(nodeclaim("nc"))
    claim = cluster.nodeclaim("nc")
    assert claim is not None
    kube.inject(Fault(422, "PUT", "/nodeclaims/nc/status", times=2))
    with pytest.raises(RejectedError):
        cluster.write_status(claim)
    with pytest.raises(RejectedError):  # the first call sent once: the second fault was still there
        cluster.write_status(claim)
    assert cluster.write_status(claim).metadata.name == "nc"
