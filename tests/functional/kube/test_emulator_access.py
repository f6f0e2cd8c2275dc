"""The emulator's gate over HTTP: who the caller is, what RBAC lets it do, priority and fairness; the Cluster
port's adapter turning 403 and 429 into its typed errors and retries; and the real kubectl's ``auth can-i``
answering from the emulator's authorizer, impersonation included."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from autoscaler.kube.connect import plain_client
from autoscaler.kube.port import ForbiddenError, TransientClusterError
from autoscaler.kube.resources import KINDS
from autoscaler.kube.rest import KubeRest, RetryPolicy
from autoscaler_dev.kube_emulator.authentication import ADMIN, DEFAULT_TOKEN, Authenticator, authenticated
from autoscaler_dev.kube_emulator.emulator import KubeEmulator
from autoscaler_dev.kube_emulator.enforcement import enforce
from autoscaler_dev.kube_emulator.flowcontrol import FlowControl, FlowSettings
from autoscaler_dev.kube_emulator.gate import KubeGate
from autoscaler_dev.world.kube_access import DEFAULT_RBAC, FORWARDER, FUNCTIONS, load_manifests
from tests.support.kube import node

KUBECTL = shutil.which("kubectl")


@pytest.fixture
def kube() -> Iterator[KubeEmulator]:
    with KubeEmulator() as emulator:
        emulator.create(node("n1"))
        yield emulator


@pytest.fixture
def gate(kube: KubeEmulator) -> KubeGate:
    return enforce(kube, load_manifests(DEFAULT_RBAC))


def rest_as(kube: KubeEmulator, token: str, **options: object) -> KubeRest:
    return KubeRest(plain_client(kube.url, token), **options)  # type: ignore[arg-type]


def test_the_functions_may_do_what_their_cluster_role_grants(kube: KubeEmulator, gate: KubeGate) -> None:
    functions = rest_as(kube, gate.authenticator.issue(FUNCTIONS))
    patched = functions.patch(KINDS["Node"], "n1", {"metadata": {"labels": {"seen": "yes"}}})
    assert patched["metadata"]["labels"]["seen"] == "yes"
    services = "/api/v1/namespaces/kube-system/services"
    assert functions.exchange("GET", f"{services}/kube-dns", accept=lambda s, _b: s == 404)[0] == 404  # allowed
    assert functions.exchange("GET", f"{services}/other", accept=lambda s, _b: s == 403)[0] == 403
    forwarder = rest_as(kube, gate.authenticator.issue(FORWARDER))
    assert [n["metadata"]["name"] for n in forwarder.list(KINDS["Node"])[0]] == ["n1"]
    with pytest.raises(ForbiddenError, match='cannot patch resource "nodes"'):
        forwarder.patch(KINDS["Node"], "n1", {"metadata": {"labels": {"seen": "no"}}})
    assert gate.denied == {FUNCTIONS.name: 1, FORWARDER.name: 1}


def test_a_denied_request_gets_the_api_servers_forbidden_status_and_is_counted(
    kube: KubeEmulator, gate: KubeGate
) -> None:
    functions = rest_as(kube, gate.authenticator.issue(FUNCTIONS))
    with pytest.raises(
        ForbiddenError, match=r'secrets is forbidden: User "arn:aws:sts::.*" cannot list resource "secrets"'
    ):
        functions.exchange("GET", "/api/v1/namespaces/kube-system/secrets")
    status, body = functions.exchange("DELETE", "/apis/karpenter.sh/v1/nodepools/x", accept=lambda s, _b: s == 403)
    assert (status, body["reason"], body["code"]) == (403, "Forbidden", 403)
    assert body["details"] == {"name": "x", "group": "karpenter.sh", "kind": "nodepools"}
    assert body["message"].endswith(
        'cannot delete resource "nodepools" in API group "karpenter.sh" at the cluster scope'
    )
    assert gate.denied == {FUNCTIONS.name: 2}
    assert [(d.verb, d.resource) for d in gate.denials] == [("list", "secrets"), ("delete", "nodepools.karpenter.sh")]


def test_unknown_credentials_are_unauthorized_and_no_credentials_are_anonymous(
    kube: KubeEmulator, gate: KubeGate
) -> None:
    with pytest.raises(ForbiddenError, match="401 Unauthorized"):
        rest_as(kube, "made-up").get(KINDS["Node"], "n1")
    anonymous = rest_as(kube, "")
    with pytest.raises(ForbiddenError, match='User "system:anonymous" cannot get resource "nodes"'):
        anonymous.get(KINDS["Node"], "n1")
    assert anonymous.exchange("GET", "/version")[1]["major"] == "1"  # public info


def test_without_enforcement_the_emulator_trusts_everyone(kube: KubeEmulator) -> None:
    assert rest_as(kube, "made-up").get(KINDS["Node"], "n1")["metadata"]["name"] == "n1"


class Clock:
    def __init__(self) -> None:
        self.elapsed = 0.0

    def jump(self, to: float) -> None:
        self.elapsed = max(self.elapsed, to)


def test_a_throttled_caller_gets_429_with_retry_after_and_the_adapter_waits_it_out(kube: KubeEmulator) -> None:
    clock = Clock()
    flow = FlowControl(FlowSettings(rate=1.0, burst=2, retry_after=1, latency=False), clock)
    gate = enforce(kube, authorize=False, flow=flow)
    token = gate.authenticator.issue(authenticated("busy"))
    once = rest_as(kube, token, retry=RetryPolicy(attempts=1))
    answers = [once.exchange("GET", "/api/v1/nodes", accept=lambda s, _b: s == 429) for _ in range(3)]
    body = answers[-1][1]
    assert [a[0] for a in answers] == [200, 200, 429]
    assert (body["kind"], body["reason"], body["details"]) == ("Status", "TooManyRequests", {"retryAfterSeconds": 1})
    response = once._send("GET", "/api/v1/nodes", query=(), body=None, content_type="application/json", timeout=5)
    assert response.status == 429 and response.headers["Retry-After"] == "1"
    with pytest.raises(TransientClusterError, match="429"):
        once.get(KINDS["Node"], "n1")

    waits: list[float] = []

    def sleep(seconds: float) -> None:  # the world's clock moves while the client waits
        waits.append(seconds)
        clock.jump(clock.elapsed + seconds)

    patient = rest_as(kube, token, retry=RetryPolicy(attempts=3), sleep=sleep)
    assert patient.get(KINDS["Node"], "n1")["metadata"]["name"] == "n1"
    assert waits == [1.0]  # the server's Retry-After, not the backoff
    assert gate.throttled == 4


# --- the real kubectl ------------------------------------------------------------------------------------
@pytest.fixture
def can_i(kube: KubeEmulator, tmp_path: Path):  # type: ignore[no-untyped-def]
    """``kubectl auth can-i`` as the embedded world's kubectl user (client-go sends no credentials to a plain-http
    server: the world serves those requests as the admin)."""
    if KUBECTL is None:
        pytest.skip("kubectl is not installed on this machine")
    enforce(kube, load_manifests(DEFAULT_RBAC), authenticator=Authenticator(unauthenticated=ADMIN))
    admin = kube.write_kubeconfig(tmp_path / "admin")

    def run(*args: str) -> tuple[int, str, str]:
        command = [KUBECTL, "--kubeconfig", str(admin), "--cache-dir", str(tmp_path / "cache")]
        result = subprocess.run(
            [*command, "auth", "can-i", *args], capture_output=True, text=True, timeout=30, check=False
        )
        return result.returncode, result.stdout.strip(), result.stderr

    return run


FUNCTIONS_AS = ("--as", "fn", "--as-group", "serverless-karpenter")
FORWARDER_AS = ("--as", "system:serviceaccount:kube-system:serverless-karpenter-forwarder")


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        (("patch", "nodes", *FUNCTIONS_AS), "yes"),
        (("delete", "nodes", *FUNCTIONS_AS), "yes"),
        (("watch", "pods", *FUNCTIONS_AS), "no"),
        (("create", "pods", "--subresource", "eviction", "-n", "team-a", *FUNCTIONS_AS), "yes"),
        (("create", "pods", "-n", "team-a", *FUNCTIONS_AS), "no"),
        (("update", "nodeclaims.karpenter.sh", "--subresource", "status", *FUNCTIONS_AS), "yes"),
        (("get", "secrets", "-n", "kube-system", *FUNCTIONS_AS), "no"),
        (("get", "services/kube-dns", "-n", "kube-system", *FUNCTIONS_AS), "yes"),
        (("get", "services/coredns", "-n", "kube-system", *FUNCTIONS_AS), "no"),
        (("delete", "leases", "-n", "kube-node-lease", *FUNCTIONS_AS), "yes"),
        (("delete", "leases", "-n", "default", *FUNCTIONS_AS), "no"),
        (("watch", "nodeclaims.karpenter.sh", *FORWARDER_AS), "yes"),
        (("update", "leases/serverless-karpenter-forwarder", "-n", "kube-system", *FORWARDER_AS), "yes"),
        (("update", "leases/someone-else", "-n", "kube-system", *FORWARDER_AS), "no"),
        (("patch", "nodes", *FORWARDER_AS), "no"),
        (("delete", "nodepools.karpenter.sh"), "yes"),  # the kubeconfig's user is the cluster's admin
    ],
    ids=lambda v: " ".join(v) if isinstance(v, tuple) else v,
)
def test_kubectl_auth_can_i_answers_from_the_enforced_rbac(can_i, question: tuple[str, ...], answer: str) -> None:  # type: ignore[no-untyped-def]
    code, out, err = can_i(*question)
    assert out == answer, err
    assert code == (0 if answer == "yes" else 1)


def test_only_who_may_impersonate_can_ask_as_someone_else(kube: KubeEmulator, gate: KubeGate) -> None:
    alice = rest_as(kube, gate.authenticator.issue(authenticated("alice")))
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"verb": "list", "resource": "pods", "namespace": "default"}},
    }
    path = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
    status, answer = alice.exchange("POST", path, body=review)
    assert (status, answer["kind"], answer["status"]["allowed"]) == (201, "SelfSubjectAccessReview", False)
    client = alice.api_client
    headers = {"Impersonate-User": "bob", "Content-Type": "application/json"}
    response = client.call_api(
        *client.param_serialize("POST", path, header_params=headers, body=review, auth_settings=["BearerToken"])
    )
    refused = json.loads(response.read())
    assert response.status == 403
    assert refused["message"] == (
        'users "bob" is forbidden: User "alice" cannot impersonate resource "users" in API group "" '
        "at the cluster scope"
    )


def test_a_subject_access_review_answers_for_the_user_it_names_to_whoever_may_create_one(
    kube: KubeEmulator, gate: KubeGate
) -> None:
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": "fn",
            "groups": ["serverless-karpenter"],
            "resourceAttributes": {"verb": "create", "resource": "pods", "subresource": "eviction", "namespace": "x"},
        },
    }
    path = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
    admin = rest_as(kube, DEFAULT_TOKEN)
    answer = admin.exchange("POST", path, body=review)[1]
    assert answer["status"]["allowed"] is True
    assert "ClusterRoleBinding serverless-karpenter" in answer["status"]["reason"]
    review["spec"]["resourceAttributes"]["subresource"] = ""
    assert admin.exchange("POST", path, body=review)[1]["status"]["allowed"] is False  # create pods: no
    alice = rest_as(kube, gate.authenticator.issue(authenticated("alice")))
    with pytest.raises(ForbiddenError, match='cannot create resource "subjectaccessreviews"'):
        alice.exchange("POST", path, body=review)


def test_rbac_applied_through_the_api_takes_effect_at_the_next_request_and_is_withdrawn_by_deleting_it(
    kube: KubeEmulator,
) -> None:
    gate = enforce(kube)  # nothing but the bootstrap policy: the RBAC comes through the API, as kubectl applies it
    admin, alice = rest_as(kube, DEFAULT_TOKEN), rest_as(kube, gate.authenticator.issue(authenticated("alice", "ops")))
    nodes = "/api/v1/nodes"
    assert alice.exchange("GET", nodes, accept=lambda s, _b: s == 403)[0] == 403
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "node-reader"},
        "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]}],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "ops-read-nodes"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "node-reader"},
        "subjects": [{"kind": "Group", "name": "ops", "apiGroup": "rbac.authorization.k8s.io"}],
    }
    admin.exchange("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", body=role)
    admin.exchange("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", body=binding)
    assert [n["metadata"]["name"] for n in alice.exchange("GET", nodes)[1]["items"]] == ["n1"]
    # A role's rules are read at the request, not copied into the binding: narrowing the role narrows the grant.
    role["rules"][0]["verbs"] = ["get"]
    admin.exchange("PUT", "/apis/rbac.authorization.k8s.io/v1/clusterroles/node-reader", body=role)
    assert alice.exchange("GET", nodes, accept=lambda s, _b: s == 403)[0] == 403
    assert alice.exchange("GET", f"{nodes}/n1")[0] == 200
    admin.exchange("DELETE", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/ops-read-nodes")
    assert alice.exchange("GET", f"{nodes}/n1", accept=lambda s, _b: s == 403)[0] == 403
    # A binding without a valid roleRef grants nothing (and does not break the authorizer for anyone else).
    broken = {**binding, "metadata": {"name": "broken"}, "roleRef": {"kind": "Nothing", "name": ""}}
    admin.exchange("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", body=broken)
    assert alice.exchange("GET", f"{nodes}/n1", accept=lambda s, _b: s == 403)[0] == 403
    assert admin.exchange("GET", f"{nodes}/n1")[0] == 200
