"""The official kubernetes client, unchanged, against the emulator: the API server behaviour the controllers rely on."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import kubernetes
import pytest
from kubernetes.client import ApiException

from autoscaler.kube.connect import plain_client
from autoscaler_dev.kube_emulator.emulator import KubeEmulator
from tests.support.kube import nodeclaim, nodeclass, nodepool, pdb, pod


@pytest.fixture
def api(kube: KubeEmulator) -> Any:
    return plain_client(kube.url)


@pytest.fixture
def core(api: Any) -> kubernetes.client.CoreV1Api:
    return kubernetes.client.CoreV1Api(api)


@pytest.fixture
def custom(api: Any) -> kubernetes.client.CustomObjectsApi:
    return kubernetes.client.CustomObjectsApi(api)


def test_create_answers_201_with_the_stored_object(core: kubernetes.client.CoreV1Api) -> None:
    created = core.create_namespaced_pod("default", {**pod("x"), "metadata": {"generateName": "web-"}})
    assert isinstance(created, kubernetes.client.V1Pod)
    assert created.metadata.name.startswith("web-") and len(created.metadata.name) == len("web-") + 5
    assert created.metadata.uid and created.metadata.resource_version and created.metadata.creation_timestamp
    with pytest.raises(ApiException) as error:
        core.create_namespaced_pod("default", {**pod("dup")})
        core.create_namespaced_pod("default", {**pod("dup")})
    assert error.value.status == 409 and json.loads(error.value.body)["reason"] == "AlreadyExists"


def test_put_checks_resource_version_and_bumps_generation(custom: kubernetes.client.CustomObjectsApi) -> None:
    created = custom.create_cluster_custom_object("karpenter.sh", "v1", "nodepools", nodepool("np"))
    assert created["metadata"]["generation"] == 1
    assert created["spec"]["disruption"]["consolidateAfter"] == "0s"  # schema defaults applied
    changed = {**created, "spec": {**created["spec"], "weight": 10}}
    replaced = custom.replace_cluster_custom_object("karpenter.sh", "v1", "nodepools", "np", changed)
    assert replaced["metadata"]["generation"] == 2
    assert int(replaced["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    with pytest.raises(ApiException) as error:  # the stale version loses
        custom.replace_cluster_custom_object("karpenter.sh", "v1", "nodepools", "np", changed)
    assert error.value.status == 409 and "the object has been modified" in error.value.body
    same = custom.replace_cluster_custom_object("karpenter.sh", "v1", "nodepools", "np", replaced)
    assert same["metadata"]["resourceVersion"] == replaced["metadata"]["resourceVersion"]  # no-op write


def test_status_subresource_is_separate_from_the_main_resource(custom: kubernetes.client.CustomObjectsApi) -> None:
    created = custom.create_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", nodeclaim("nc"))
    status = {
        "conditions": [
            {
                "type": "Launched",
                "status": "True",
                "reason": "Launched",
                "message": "",
                "lastTransitionTime": "2024-01-01T00:00:00Z",
            }
        ]
    }
    with_status = custom.replace_cluster_custom_object_status(
        "karpenter.sh",
        "v1",
        "nodeclaims",
        "nc",
        {**created, "status": status, "metadata": {**created["metadata"], "labels": {"ignored": "x"}}},
    )
    assert with_status["status"] == status
    assert "ignored" not in with_status["metadata"].get("labels", {})  # only status changes through /status
    assert with_status["metadata"]["generation"] == 1
    main = custom.patch_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", "nc", {"status": {"nodeName": "n"}})
    assert main["status"] == status  # the main resource cannot change status


def test_validation_answers_422_with_the_api_servers_message(custom: kubernetes.client.CustomObjectsApi) -> None:
    broken = nodepool("bad")
    broken["spec"]["weight"] = 500
    with pytest.raises(ApiException) as error:
        custom.create_cluster_custom_object("karpenter.sh", "v1", "nodepools", broken)
    status = json.loads(error.value.body)
    assert error.value.status == 422 and status["reason"] == "Invalid"
    expected = 'NodePool.karpenter.sh "bad" is invalid: spec.weight: Invalid value: 500: '
    assert status["message"] == expected + "spec.weight in body should be less than or equal to 100"
    ec2 = custom.create_cluster_custom_object("karpenter.k8s.aws", "v1", "ec2nodeclasses", nodeclass("nc"))
    ec2["spec"]["amiFamily"] = "Ubuntu"
    with pytest.raises(ApiException) as update:
        custom.replace_cluster_custom_object("karpenter.k8s.aws", "v1", "ec2nodeclasses", "nc", ec2)
    assert update.value.status == 422 and "amiFamily" in update.value.body


def test_patches_merge_json_and_strategic(
    core: kubernetes.client.CoreV1Api, custom: kubernetes.client.CustomObjectsApi
) -> None:
    core.create_namespaced_pod("default", pod("p", labels={"a": "1", "b": "2"}))
    merged = core.patch_namespaced_pod("p", "default", {"metadata": {"labels": {"a": None, "c": "3"}}})  # strategic
    assert merged.metadata.labels == {"b": "2", "c": "3"}
    status = core.patch_namespaced_pod_status(
        "p", "default", {"status": {"conditions": [{"type": "Ready", "status": "False"}]}}
    )
    assert [(c.type, c.status) for c in status.status.conditions] == [("Ready", "False")]  # merged by type
    jsonpatched = core.patch_namespaced_pod(
        "p", "default", [{"op": "add", "path": "/metadata/annotations", "value": {"x": "y"}}]
    )
    assert jsonpatched.metadata.annotations == {"x": "y"}
    custom.create_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", nodeclaim("nc"))
    patched = custom.patch_cluster_custom_object(
        "karpenter.sh", "v1", "nodeclaims", "nc", {"metadata": {"annotations": {"k": "v"}}}
    )
    assert patched["metadata"]["annotations"] == {"k": "v"}  # merge patch for custom resources


def test_finalizers_hold_deletion_until_removed(kube: KubeEmulator, custom: kubernetes.client.CustomObjectsApi) -> None:
    claim = nodeclaim("held")
    claim["metadata"]["finalizers"] = ["karpenter.sh/termination"]
    custom.create_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", claim)
    custom.delete_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", "held")
    deleting = custom.get_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", "held")
    assert deleting["metadata"]["deletionTimestamp"]
    with pytest.raises(ApiException) as error:
        custom.patch_cluster_custom_object(
            "karpenter.sh", "v1", "nodeclaims", "held", {"metadata": {"finalizers": ["a", "karpenter.sh/termination"]}}
        )
    assert error.value.status == 422
    custom.patch_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", "held", {"metadata": {"finalizers": None}})
    assert kube.get("karpenter.sh/v1", "NodeClaim", "held") is None


def test_owner_references_cascade_deletion(kube: KubeEmulator, core: kubernetes.client.CoreV1Api) -> None:
    owner = kube.create(nodeclaim("owner"))
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": "n1",
            "ownerReferences": [
                {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "name": "owner", "uid": owner["metadata"]["uid"]}
            ],
        },
    }
    core.create_node(node)
    kube.delete("karpenter.sh/v1", "NodeClaim", "owner")
    assert kube.get("v1", "Node", "n1") is None


def test_label_and_field_selectors(kube: KubeEmulator, core: kubernetes.client.CoreV1Api) -> None:
    kube.create(pod("a", node="n1", labels={"app": "web", "tier": "1"}))
    kube.create(pod("b", node="n2", labels={"app": "db"}))
    kube.create(pod("c", unschedulable=True, labels={"app": "web"}))

    def names(**selectors: str) -> list[str]:
        return sorted(p.metadata.name for p in core.list_pod_for_all_namespaces(**selectors).items)

    assert names(label_selector="app=web") == ["a", "c"]
    assert names(label_selector="app in (web,db),!tier") == ["b", "c"]
    assert names(label_selector="tier") == ["a"]
    assert names(field_selector="spec.nodeName=n1") == ["a"]
    assert names(field_selector="status.phase=Pending,spec.nodeName=") == ["c"]
    assert names(field_selector="spec.nodeName!=") == ["a", "b"]
    with pytest.raises(ApiException) as error:
        core.list_pod_for_all_namespaces(field_selector="spec.priority=1")
    assert error.value.status == 400 and "field label not supported" in error.value.body


def test_lists_paginate_with_continue_tokens(kube: KubeEmulator, core: kubernetes.client.CoreV1Api) -> None:
    for index in range(7):
        kube.create(pod(f"p{index}"))
    seen, token, pages = [], None, 0
    while True:
        page = core.list_namespaced_pod("default", limit=3, _continue=token)
        seen += [p.metadata.name for p in page.items]
        pages += 1
        token = page.metadata._continue
        if not token:
            break
        assert page.metadata.remaining_item_count == 7 - len(seen)
    assert pages == 3 and seen == sorted(f"p{i}" for i in range(7))


def _watch(core: kubernetes.client.CoreV1Api, **options: Any) -> list[tuple[str, str]]:
    stream = kubernetes.watch.Watch().stream(core.list_namespaced_pod, "default", **options)
    return [(e["type"], e["object"].metadata.name) for e in stream]


def test_watch_ends_after_timeout_seconds_and_resumes_from_a_version(
    kube: KubeEmulator, core: kubernetes.client.CoreV1Api
) -> None:
    kube.create(pod("before"))
    version = core.list_namespaced_pod("default").metadata.resource_version
    threading.Timer(0.2, lambda: (kube.create(pod("during")), kube.delete("v1", "Pod", "before"))).start()
    started = time.monotonic()
    events = _watch(core, resource_version=version, timeout_seconds=1)
    assert 0.9 < time.monotonic() - started < 5
    assert events == [("ADDED", "during"), ("DELETED", "before")]
    assert _watch(core, timeout_seconds=0) == [("ADDED", "during")]  # no version: the current state first


def test_watch_from_a_trimmed_version_is_gone(kube: KubeEmulator, core: kubernetes.client.CoreV1Api) -> None:
    kube.create(pod("old"))
    version = core.list_namespaced_pod("default").metadata.resource_version
    kube.create(pod("new"))
    kube.compact()
    with pytest.raises(ApiException) as error:
        _watch(core, resource_version=version, timeout_seconds=1)
    assert error.value.status == 410


def test_watch_with_a_selector_sees_objects_leave_it(kube: KubeEmulator, core: kubernetes.client.CoreV1Api) -> None:
    kube.create(pod("p", labels={"app": "web"}))
    version = core.list_namespaced_pod("default").metadata.resource_version
    kube.store.patch(
        kube.resource("v1", "Pod"),
        "default",
        "p",
        lambda o: {**o, "metadata": {**o["metadata"], "labels": {"app": "db"}}},
    )
    assert _watch(core, resource_version=version, label_selector="app=web", timeout_seconds=0) == [("DELETED", "p")]


def test_eviction_honours_pod_disruption_budgets(kube: KubeEmulator, core: kubernetes.client.CoreV1Api) -> None:
    for name in ("a", "b"):
        kube.create(pod(name, node="n1", labels={"app": "web"}))
    kube.create(pdb("web", {"app": "web"}, min_available=1))
    eviction = kubernetes.client.V1Eviction(metadata=kubernetes.client.V1ObjectMeta(name="a", namespace="default"))
    core.create_namespaced_pod_eviction("a", "default", eviction)
    assert kube.get("v1", "Pod", "a") is None
    with pytest.raises(ApiException) as error:
        core.create_namespaced_pod_eviction(
            "b", "default", {**eviction.to_dict(), "metadata": {"name": "b", "namespace": "default"}}
        )
    assert error.value.status == 429
    assert json.loads(error.value.body)["details"]["causes"][0]["reason"] == "DisruptionBudget"
    assert kube.get("v1", "Pod", "b") is not None


def test_discovery_serves_core_kinds_and_our_crds(api: Any) -> None:
    groups = {g.name: g for g in kubernetes.client.ApisApi(api).get_api_versions().groups}
    assert {"karpenter.sh", "karpenter.k8s.aws", "policy", "coordination.k8s.io", "events.k8s.io"} <= set(groups)
    resources = kubernetes.client.CustomObjectsApi(api).get_api_resources("karpenter.sh", "v1")
    assert {r.name for r in resources.resources} == {
        "nodepools",
        "nodepools/status",
        "nodepools/scale",  # v1.14's static NodePools: the CRD declares the scale subresource
        "nodeclaims",
        "nodeclaims/status",
    }
    overlays = kubernetes.client.CustomObjectsApi(api).get_api_resources("karpenter.sh", "v1alpha1")
    assert {r.name for r in overlays.resources} == {"nodeoverlays", "nodeoverlays/status"}
    assert kubernetes.client.VersionApi(api).get_code().minor == "32"


def test_a_created_crd_is_served(kube: KubeEmulator, api: Any) -> None:
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget", "singular": "widget"},
            "versions": [
                {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {"type": "object"}}}
            ],
        },
    }
    kubernetes.client.ApiextensionsV1Api(api).create_custom_resource_definition(crd)
    custom = kubernetes.client.CustomObjectsApi(api)
    custom.create_namespaced_custom_object(
        "example.com",
        "v1",
        "default",
        "widgets",
        {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}},
    )
    assert [
        w["metadata"]["name"]
        for w in custom.list_namespaced_custom_object("example.com", "v1", "default", "widgets")["items"]
    ] == ["w"]
