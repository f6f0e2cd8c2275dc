"""What kubectl needs from the emulator, over HTTP: OpenAPI documents, strict field validation, server-side apply
with managedFields and conflicts, the scale subresource, one event store behind both event APIs, protobuf
evictions, 415 for bodies it cannot read, and Status objects for every error."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import yaml

from autoscaler_dev.kube_emulator.emulator import KubeEmulator
from tests.support import manifests
from tests.support.kube import pod

NODEPOOL = manifests.nodepool(
    requirements=[{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}], nodeclass_name="a"
)
DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {
        "replicas": 2,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "a", "image": "x"}]}},
    },
}


def call(
    kube: KubeEmulator, method: str, path: str, body: Any = None, content_type: str = "application/json"
) -> tuple[int, Any, dict[str, str]]:
    data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    request = urllib.request.Request(kube.url + path, data=data, method=method)
    if data is not None:
        request.add_header("Content-Type", content_type)
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, json.loads(response.read() or b"null"), dict(response.headers)
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null"), dict(error.headers)


def test_openapi_v3_has_every_group_with_our_crd_schemas_and_field_validation(kube: KubeEmulator) -> None:
    _, index, _ = call(kube, "GET", "/openapi/v3")
    assert {"api/v1", "apis/apps/v1", "apis/karpenter.sh/v1", "apis/karpenter.k8s.aws/v1"} <= set(index["paths"])
    _, document, _ = call(kube, "GET", index["paths"]["apis/karpenter.sh/v1"]["serverRelativeURL"])
    schema = document["components"]["schemas"]["sh.karpenter.v1.NodePool"]
    assert schema["x-kubernetes-group-version-kind"] == [{"group": "karpenter.sh", "version": "v1", "kind": "NodePool"}]
    budgets = schema["properties"]["spec"]["properties"]["disruption"]["properties"]["budgets"]
    assert budgets["type"] == "array" and "nodes" in budgets["items"]["properties"]
    patch = document["paths"]["/apis/karpenter.sh/v1/nodepools/{name}"]["patch"]
    assert "fieldValidation" in {p["name"] for p in patch["parameters"]}
    _, apps, _ = call(kube, "GET", "/openapi/v3/apis/apps/v1")
    spec = apps["components"]["schemas"]["io.k8s.api.V1DeploymentSpec"]
    assert (
        spec["properties"]["replicas"]["type"] == "integer"
        and "desired pods" in spec["properties"]["replicas"]["description"]
    )
    code, _, _ = call(kube, "GET", "/openapi/v3/apis/nothing/v1")
    assert code == 404


def test_strict_field_validation_refuses_unknown_fields_and_warn_warns(kube: KubeEmulator) -> None:
    typo = {**NODEPOOL, "spec": {**NODEPOOL["spec"], "disruptoin": {}}}
    code, status, _ = call(kube, "POST", "/apis/karpenter.sh/v1/nodepools?fieldValidation=Strict", typo)
    assert (code, status["reason"]) == (400, "BadRequest")
    assert status["message"] == 'strict decoding error: unknown field "spec.disruptoin"'
    loose = {**DEPLOYMENT, "spec": {**DEPLOYMENT["spec"], "replica": 3}}
    code, _, headers = call(kube, "POST", "/apis/apps/v1/namespaces/default/deployments?fieldValidation=Warn", loose)
    assert code == 201 and headers["Warning"] == '299 - "unknown field \\"spec.replica\\""'
    bad_pod = pod("p")
    bad_pod["spec"]["containers"][0]["imagee"] = "x"
    code, status, _ = call(kube, "POST", "/api/v1/namespaces/default/pods?fieldValidation=Strict", bad_pod)
    assert code == 400 and 'unknown field "spec.containers[0].imagee"' in status["message"]
    code, _, _ = call(kube, "POST", "/api/v1/namespaces/default/pods", bad_pod)  # the autoscaler's clients do not ask
    assert code == 201


def test_server_side_apply_creates_owns_conflicts_and_forces(kube: KubeEmulator) -> None:
    path = "/apis/apps/v1/namespaces/default/deployments/web"
    body = yaml.safe_dump(DEPLOYMENT).encode()
    code, created, _ = call(kube, "PATCH", path + "?fieldManager=ops", body, "application/apply-patch+yaml")
    assert code == 201 and created["spec"]["replicas"] == 2
    assert [(m["manager"], m["operation"]) for m in created["metadata"]["managedFields"]] == [("ops", "Apply")]
    assert "f:replicas" in created["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]

    other = yaml.safe_dump({**DEPLOYMENT, "spec": {**DEPLOYMENT["spec"], "replicas": 5}}).encode()
    code, status, _ = call(kube, "PATCH", path + "?fieldManager=ci", other, "application/apply-patch+yaml")
    assert (code, status["reason"]) == (409, "Conflict")
    assert status["details"]["causes"][0] == {
        "reason": "FieldManagerConflict",
        "message": 'conflict with "ops": .spec.replicas',
        "field": ".spec.replicas",
    }
    same = yaml.safe_dump(DEPLOYMENT).encode()  # the same value is shared ownership, not a conflict
    assert call(kube, "PATCH", path + "?fieldManager=ci", same, "application/apply-patch+yaml")[0] == 200

    code, forced, _ = call(kube, "PATCH", path + "?fieldManager=ci&force=true", other, "application/apply-patch+yaml")
    assert code == 200 and forced["spec"]["replicas"] == 5
    owners = {m["manager"]: m["fieldsV1"] for m in forced["metadata"]["managedFields"]}
    assert "f:replicas" in owners["ci"]["f:spec"] and "f:replicas" not in owners["ops"].get("f:spec", {})

    now = yaml.safe_load(other)  # replicas 5: what ci set, so ops shares it rather than conflicts
    fewer = {**now, "metadata": {**now["metadata"], "labels": {"team": "a"}}}
    code, labelled, _ = call(
        kube, "PATCH", path + "?fieldManager=ops", yaml.safe_dump(fewer).encode(), "application/apply-patch+yaml"
    )
    assert code == 200 and labelled["metadata"]["labels"] == {"team": "a"}
    dropped = now  # ops no longer sets the label, which nobody else owns: it goes
    code, applied, _ = call(
        kube, "PATCH", path + "?fieldManager=ops", yaml.safe_dump(dropped).encode(), "application/apply-patch+yaml"
    )
    assert code == 200 and "team" not in (applied["metadata"].get("labels") or {})
    code, status, _ = call(kube, "PATCH", path, body, "application/apply-patch+yaml")
    assert code == 400 and "fieldManager is required" in status["message"]


def test_scale_subresource_reads_and_writes_replicas(kube: KubeEmulator) -> None:
    kube.create(DEPLOYMENT)
    path = "/apis/apps/v1/namespaces/default/deployments/web/scale"
    code, scale, _ = call(kube, "GET", path)
    assert code == 200 and scale["kind"] == "Scale" and scale["apiVersion"] == "autoscaling/v1"
    assert scale["spec"] == {"replicas": 2} and scale["status"]["selector"] == "app=web"
    code, scaled, _ = call(kube, "PATCH", path, {"spec": {"replicas": 7}}, "application/merge-patch+json")
    assert code == 200 and scaled["spec"]["replicas"] == 7
    assert kube.get("apps/v1", "Deployment", "web")["spec"]["replicas"] == 7  # type: ignore[index]
    code, status, _ = call(kube, "PATCH", path, {"spec": {"replicas": -1}}, "application/merge-patch+json")
    assert (code, status["reason"]) == (422, "Invalid")


def test_one_event_store_behind_both_event_apis(kube: KubeEmulator) -> None:
    event = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "e1", "namespace": "default"},
        "regarding": {"kind": "Pod", "name": "web-1", "namespace": "default"},
        "note": "Pod should schedule on: nodeclaim/default-x",
        "reason": "Nominated",
        "type": "Normal",
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "reportingController": "karpenter.sh/serverless-karpenter",
        "reportingInstance": "provisioner",
        "action": "Nominated",
    }
    code, created, _ = call(kube, "POST", "/apis/events.k8s.io/v1/namespaces/default/events", event)
    assert code == 201
    selector = "?fieldSelector=involvedObject.name%3Dweb-1"
    _, core, _ = call(kube, "GET", "/api/v1/namespaces/default/events" + selector)
    (seen,) = core["items"]
    assert seen["involvedObject"]["name"] == "web-1" and seen["message"] == event["note"]
    assert seen["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert seen["source"] == {"component": "karpenter.sh/serverless-karpenter"}
    core_event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "e2", "namespace": "default"},
        "involvedObject": {"kind": "Node", "name": "n1"},
        "message": "cordoned",
        "reason": "Cordoned",
        "lastTimestamp": "2026-01-01T00:00:01Z",
    }
    call(kube, "POST", "/api/v1/namespaces/default/events", core_event)
    _, mirrored, _ = call(kube, "GET", "/apis/events.k8s.io/v1/namespaces/default/events/e2")
    assert mirrored["regarding"]["name"] == "n1" and mirrored["note"] == "cordoned"
    assert mirrored["eventTime"] == "2026-01-01T00:00:01.000000Z"
    call(kube, "DELETE", "/api/v1/namespaces/default/events/e1")
    assert call(kube, "GET", "/apis/events.k8s.io/v1/namespaces/default/events/e1")[0] == 404


def _protobuf_eviction(name: str, namespace: str) -> bytes:
    def field(number: int, payload: bytes) -> bytes:
        return bytes([number << 3 | 2, len(payload)]) + payload

    metadata = field(1, name.encode()) + field(3, namespace.encode())
    eviction = field(1, metadata) + field(2, b"")
    type_meta = field(1, b"policy/v1") + field(2, b"Eviction")
    return b"k8s\x00" + field(1, type_meta) + field(2, eviction)


def test_protobuf_evictions_are_read_and_other_protobuf_is_415(kube: KubeEmulator) -> None:
    kube.create(pod("web-1", node="n1"))
    path = "/api/v1/namespaces/default/pods/web-1/eviction"
    code, status, _ = call(
        kube, "POST", path, _protobuf_eviction("web-1", "default"), "application/vnd.kubernetes.protobuf"
    )
    assert (code, status["status"]) == (201, "Success")
    assert kube.get("v1", "Pod", "web-1") is None
    code, status, _ = call(
        kube, "POST", "/api/v1/namespaces/default/pods", b"k8s\x00\x0a\x00", "application/vnd.kubernetes.protobuf"
    )
    assert (code, status["kind"], status["reason"]) == (415, "Status", "UnsupportedMediaType")
    code, status, _ = call(kube, "POST", "/api/v1/namespaces/default/pods", b"<pod/>", "application/xml")
    assert (code, status["reason"]) == (415, "UnsupportedMediaType")
    code, status, _ = call(kube, "POST", "/api/v1/namespaces/default/pods", b"{not json", "application/json")
    assert (code, status["kind"], status["reason"]) == (400, "Status", "BadRequest")


def test_eviction_discovery_and_node_proxy_answer_as_a_cluster(kube: KubeEmulator) -> None:
    _, resources, _ = call(kube, "GET", "/api/v1")
    eviction = next(r for r in resources["resources"] if r["name"] == "pods/eviction")
    assert (eviction["group"], eviction["version"], eviction["kind"]) == ("policy", "v1", "Eviction")
    code, status, _ = call(kube, "GET", "/api/v1/nodes/n1/proxy/stats/summary")
    assert (code, status["kind"], status["reason"]) == (404, "Status", "NotFound")
    assert "no kubelet" in status["message"]


def test_new_pods_are_pending_and_workloads_defaulted(kube: KubeEmulator) -> None:
    bare = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "a"}]}}
    _, created, _ = call(kube, "POST", "/api/v1/namespaces/default/pods", bare)
    assert created["status"]["phase"] == "Pending" and created["spec"]["restartPolicy"] == "Always"
    one = {**DEPLOYMENT, "spec": {k: v for k, v in DEPLOYMENT["spec"].items() if k != "replicas"}}
    _, deployment, _ = call(kube, "POST", "/apis/apps/v1/namespaces/default/deployments", one)
    assert deployment["spec"]["replicas"] == 1 and deployment["spec"]["strategy"]["type"] == "RollingUpdate"
