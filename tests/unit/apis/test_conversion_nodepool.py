"""NodePool and NodeClaim conversion, case by case as Karpenter v1.0's webhooks convert them (their
conversion tests' cases), plus the two places where we deliberately differ."""

from __future__ import annotations

import json

from autoscaler.apis.v1 import labels as wk
from tests.unit.apis.conversion_cases import (
    NODECLAIM_V1BETA1,
    NODEPOOL_V1BETA1,
    V1,
    changed,
    to_v1,
    to_v1beta1,
)

KUBELET_ANNOTATION = wk.ANNOTATION_KUBELET_COMPATIBILITY
REF_ANNOTATION = wk.ANNOTATION_NODECLASS_REFERENCE


def test_nodepool_to_v1_moves_fields_and_records_what_v1_cannot_hold() -> None:
    v1 = to_v1(NODEPOOL_V1BETA1)
    assert v1["apiVersion"] == V1
    metadata, spec = v1["metadata"], v1["spec"]
    assert {k: metadata[k] for k in ("name", "uid", "labels")} == {
        "name": "default",
        "uid": "0d3c9f2e",
        "labels": {"team": "a"},
    }
    template = spec["template"]
    assert template["metadata"] == NODEPOOL_V1BETA1["spec"]["template"]["metadata"]
    source = NODEPOOL_V1BETA1["spec"]["template"]["spec"]
    assert {k: template["spec"][k] for k in ("taints", "startupTaints", "requirements")} == {
        k: source[k] for k in ("taints", "startupTaints", "requirements")
    }
    assert template["spec"]["nodeClassRef"] == {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}
    assert template["spec"]["expireAfter"] == "336h"
    assert "kubelet" not in template["spec"]
    assert spec["disruption"] == {
        "consolidateAfter": "0s",
        "consolidationPolicy": "WhenEmptyOrUnderutilized",
        "budgets": NODEPOOL_V1BETA1["spec"]["disruption"]["budgets"],
    }
    assert (spec["limits"], spec["weight"]) == ({"cpu": "100"}, 10)
    assert v1["status"] == NODEPOOL_V1BETA1["status"]
    # The annotations, byte for byte as Karpenter v1.0 writes them (Go's JSON: struct order, sorted map keys).
    annotations = metadata["annotations"]
    assert annotations["note"] == "kept"
    assert (
        annotations[REF_ANNOTATION]
        == '{"kind":"EC2NodeClass","name":"default","apiVersion":"karpenter.k8s.aws/v1beta1"}'
    )
    assert annotations[KUBELET_ANNOTATION] == (
        '{"maxPods":110,"systemReserved":{"cpu":"100m","memory":"256Mi"},"evictionSoft":{"memory.available":"10%"},'
        '"evictionSoftGracePeriod":{"memory.available":"1m"}}'
    )


def test_nodepool_reference_defaults_to_ec2nodeclass() -> None:
    minimal = changed(NODEPOOL_V1BETA1, spec__template__spec__nodeClassRef={"name": "mine"})
    v1 = to_v1(minimal)
    assert v1["spec"]["template"]["spec"]["nodeClassRef"] == {
        "group": "karpenter.k8s.aws",
        "kind": "EC2NodeClass",
        "name": "mine",
    }
    assert v1["metadata"]["annotations"][REF_ANNOTATION] == '{"name":"mine"}'
    other_group = changed(
        NODEPOOL_V1BETA1, spec__template__spec__nodeClassRef={"apiVersion": "example.com/v2", "kind": "K", "name": "n"}
    )
    assert to_v1(other_group)["spec"]["template"]["spec"]["nodeClassRef"] == {
        "group": "example.com",
        "kind": "K",
        "name": "n",
    }


def test_consolidation_policies_to_v1() -> None:
    def disruption(**fields: str) -> dict[str, str]:
        result = to_v1(changed(NODEPOOL_V1BETA1, spec__disruption=fields))["spec"]["disruption"]
        return {k: result[k] for k in ("consolidationPolicy", "consolidateAfter")}

    assert disruption(consolidationPolicy="WhenEmpty", consolidateAfter="2121s") == {
        "consolidationPolicy": "WhenEmpty",
        "consolidateAfter": "2121s",
    }
    assert disruption() == {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "0s"}
    # Where we differ: v0.37 read WhenUnderutilized + Never as "never consolidate"; Karpenter v1.0 turns it
    # into 0s (consolidation on), we keep Never, which means the same in v1.
    assert disruption(consolidateAfter="Never") == {
        "consolidationPolicy": "WhenEmptyOrUnderutilized",
        "consolidateAfter": "Never",
    }


def test_expire_after_moves_into_the_template_both_ways() -> None:
    for value in ("10h", "Never"):
        v1 = to_v1(changed(NODEPOOL_V1BETA1, spec__disruption__expireAfter=value))
        assert v1["spec"]["template"]["spec"]["expireAfter"] == value
        assert to_v1beta1(v1)["spec"]["disruption"]["expireAfter"] == value


def test_nodepool_back_to_v1beta1_drops_what_v1beta1_lacks() -> None:
    v1 = to_v1(NODEPOOL_V1BETA1)
    v1["metadata"]["annotations"][wk.ANNOTATION_STORED_VERSION_MIGRATED] = "true"
    v1["spec"]["template"]["spec"]["terminationGracePeriod"] = "1h"
    v1["spec"]["disruption"]["budgets"][0]["reasons"] = ["Drifted"]
    v1["spec"]["disruption"]["consolidateAfter"] = "2121s"
    back = to_v1beta1(v1)
    assert back["metadata"]["annotations"] == {"note": "kept"}
    assert "terminationGracePeriod" not in back["spec"]["template"]["spec"]
    assert back["spec"]["disruption"]["budgets"][0] == {"nodes": "20%"}
    # v1beta1 allows no duration with WhenUnderutilized
    assert back["spec"]["disruption"]["consolidationPolicy"] == "WhenUnderutilized"
    assert "consolidateAfter" not in back["spec"]["disruption"]
    assert back["spec"]["template"]["spec"]["kubelet"] == NODEPOOL_V1BETA1["spec"]["template"]["spec"]["kubelet"]
    when_empty = changed(v1, spec__disruption__consolidationPolicy="WhenEmpty")
    assert to_v1beta1(when_empty)["spec"]["disruption"]["consolidateAfter"] == "2121s"


def test_reference_back_to_v1beta1() -> None:
    v1 = to_v1(NODEPOOL_V1BETA1)
    assert (
        to_v1beta1(v1)["spec"]["template"]["spec"]["nodeClassRef"]
        == NODEPOOL_V1BETA1["spec"]["template"]["spec"]["nodeClassRef"]
    )
    # Without the annotation (a NodePool written as v1): kind and name, no apiVersion, as Karpenter v1.0 does.
    del v1["metadata"]["annotations"][REF_ANNOTATION]
    assert to_v1beta1(v1)["spec"]["template"]["spec"]["nodeClassRef"] == {"kind": "EC2NodeClass", "name": "default"}
    # Where we differ: after the v1 reference changed, the recorded one no longer applies (Karpenter v1.0
    # would still show the old class to v1beta1 readers).
    edited = to_v1(NODEPOOL_V1BETA1)
    edited["spec"]["template"]["spec"]["nodeClassRef"]["name"] = "other"
    assert to_v1beta1(edited)["spec"]["template"]["spec"]["nodeClassRef"] == {"kind": "EC2NodeClass", "name": "other"}


def test_no_kubelet_means_no_annotation() -> None:
    stale = changed(NODEPOOL_V1BETA1, spec__template__spec__kubelet=None)
    stale["metadata"]["annotations"][KUBELET_ANNOTATION] = '{"maxPods":1}'
    v1 = to_v1(stale)
    assert KUBELET_ANNOTATION not in v1["metadata"]["annotations"]
    assert "kubelet" not in to_v1beta1(v1)["spec"]["template"]["spec"]


def test_nodeclaim_to_v1_and_back() -> None:
    v1 = to_v1(NODECLAIM_V1BETA1, nodepool_expire_after={"default": "48h"})
    assert v1["spec"]["expireAfter"] == "48h"
    assert v1["spec"]["resources"] == {"requests": {"cpu": "1", "pods": "3"}}
    assert v1["spec"]["nodeClassRef"] == {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}
    assert json.loads(v1["metadata"]["annotations"][KUBELET_ANNOTATION]) == {"maxPods": 20}
    assert v1["status"] == NODECLAIM_V1BETA1["status"]
    assert wk.ANNOTATION_EXPIRE_AFTER_COMPATIBILITY not in v1["metadata"]["annotations"]
    v1["spec"]["terminationGracePeriod"] = "30m"
    v1["status"]["lastPodEventTime"] = "2024-08-01T00:00:00Z"
    back = to_v1beta1(v1)
    assert back == NODECLAIM_V1BETA1


def test_nodeclaim_expire_after_without_its_nodepool() -> None:
    # The webhook cannot look the NodePool up: the NodeClaim is marked to take the NodePool's at runtime,
    # and holds Karpenter v1.0's fallback for a NodePool that is gone (its NillableDuration(nil): Never).
    v1 = to_v1(NODECLAIM_V1BETA1)
    assert v1["metadata"]["annotations"][wk.ANNOTATION_EXPIRE_AFTER_COMPATIBILITY] == "true"
    assert v1["spec"]["expireAfter"] == "Never"
    assert wk.ANNOTATION_EXPIRE_AFTER_COMPATIBILITY not in to_v1beta1(v1).get("metadata", {}).get("annotations", {})
    # A NodeClaim of no NodePool has nothing to look up: Never, as Karpenter v1.0 writes.
    orphan = to_v1(changed(NODECLAIM_V1BETA1, metadata__labels=None))
    assert wk.ANNOTATION_EXPIRE_AFTER_COMPATIBILITY not in orphan["metadata"]["annotations"]
    assert orphan["spec"]["expireAfter"] == "Never"
