"""The emulator's authorizer decides as the API server's Node and RBAC authorizers do: verbs, subresources,
resourceNames, aggregation, namespaced against cluster-wide bindings, non-resource URLs, and the 403 it answers."""

from __future__ import annotations

from typing import Any

import pytest

from autoscaler_dev.kube_emulator.authentication import ADMIN, ANONYMOUS, User, authenticated, node, service_account
from autoscaler_dev.kube_emulator.authorization import Authorizer, forbidden
from autoscaler_dev.kube_emulator.rbac import PolicyError, RBACPolicy
from autoscaler_dev.kube_emulator.request_info import Attributes, request_attributes
from autoscaler_dev.world.kube_access import DEFAULT_RBAC, FORWARDER, FUNCTIONS, load_manifests

ALICE = authenticated("alice", "team")
RBAC = "rbac.authorization.k8s.io/v1"


def cluster_role(
    name: str, *rules: dict[str, Any], labels: dict[str, str] | None = None, **extra: Any
) -> dict[str, Any]:
    return {
        "apiVersion": RBAC,
        "kind": "ClusterRole",
        "metadata": {"name": name, "labels": labels or {}},
        "rules": list(rules),
        **extra,
    }


def role(name: str, namespace: str, *rules: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": RBAC,
        "kind": "Role",
        "metadata": {"name": name, "namespace": namespace},
        "rules": list(rules),
    }


def binding(
    kind: str, name: str, role: tuple[str, str], *, namespace: str = "", subject: dict[str, str] | None = None
) -> dict[str, Any]:
    role_kind, role_name = role
    metadata = {"name": name, **({"namespace": namespace} if namespace else {})}
    subject = subject or {"kind": "User", "name": "alice"}
    return {
        "apiVersion": RBAC,
        "kind": kind,
        "metadata": metadata,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role_name},
        "subjects": [subject],
    }


def allowed(policy: RBACPolicy, user: User, method: str, path: str, **query: str) -> bool:
    return policy.authorize(request_attributes(user, method, path, query)).allowed


def test_a_rule_on_a_resource_does_not_cover_its_subresources_and_a_subresource_rule_covers_only_it() -> None:
    policy = RBACPolicy(
        [
            cluster_role(
                "r",
                {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "create"]},
                {"apiGroups": [""], "resources": ["nodes/status"], "verbs": ["patch"]},
            ),
            binding("ClusterRoleBinding", "b", ("ClusterRole", "r")),
        ]
    )
    assert allowed(policy, ALICE, "GET", "/api/v1/namespaces/default/pods/p")
    assert not allowed(policy, ALICE, "POST", "/api/v1/namespaces/default/pods/p/eviction")
    assert allowed(policy, ALICE, "PATCH", "/api/v1/nodes/n1/status")
    assert not allowed(policy, ALICE, "PATCH", "/api/v1/nodes/n1")


def test_wildcard_subresource_forms() -> None:
    policy = RBACPolicy(
        [
            cluster_role("r", {"apiGroups": ["*"], "resources": ["*/status", "nodeclaims/*"], "verbs": ["update"]}),
            binding("ClusterRoleBinding", "b", ("ClusterRole", "r")),
        ]
    )
    assert allowed(policy, ALICE, "PUT", "/api/v1/namespaces/default/pods/p/status")
    assert allowed(policy, ALICE, "PUT", "/apis/karpenter.sh/v1/nodeclaims/c/finalize")
    assert not allowed(policy, ALICE, "PUT", "/apis/karpenter.sh/v1/nodeclaims/c")
    assert not allowed(policy, ALICE, "PUT", "/apis/karpenter.sh/v1/nodepools/p")


@pytest.mark.parametrize(
    ("method", "path", "query", "expected"),
    [
        ("GET", "/api/v1/namespaces/kube-system/services/kube-dns", {}, True),
        ("GET", "/api/v1/namespaces/kube-system/services/other", {}, False),
        ("GET", "/api/v1/namespaces/kube-system/services", {}, False),  # a list has no name
        ("GET", "/api/v1/namespaces/kube-system/services", {"fieldSelector": "metadata.name=kube-dns"}, True),
        ("POST", "/api/v1/namespaces/kube-system/services", {}, False),  # create names nothing in its path
        ("DELETE", "/api/v1/namespaces/kube-system/services", {}, False),  # deletecollection
    ],
)
def test_resource_names_limit_a_rule_to_requests_that_name_one(
    method: str, path: str, query: dict[str, str], expected: bool
) -> None:
    verbs = ["get", "list", "create", "deletecollection"]
    policy = RBACPolicy(
        [
            role(
                "dns",
                "kube-system",
                {"apiGroups": [""], "resources": ["services"], "resourceNames": ["kube-dns"], "verbs": verbs},
            ),
            binding("RoleBinding", "b", ("Role", "dns"), namespace="kube-system"),
        ]
    )
    assert allowed(policy, ALICE, method, path, **query) is expected


def test_an_aggregated_cluster_role_has_the_rules_of_the_roles_its_selectors_pick() -> None:
    policy = RBACPolicy(
        [
            cluster_role(
                "aggregate",
                aggregationRule={"clusterRoleSelectors": [{"matchLabels": {"rbac.example/aggregate": "true"}}]},
            ),
            cluster_role(
                "picked",
                {"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]},
                labels={"rbac.example/aggregate": "true"},
            ),
            cluster_role("ignored", {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}),
            binding("ClusterRoleBinding", "b", ("ClusterRole", "aggregate")),
        ]
    )
    assert allowed(policy, ALICE, "GET", "/api/v1/nodes")
    assert not allowed(policy, ALICE, "GET", "/api/v1/pods")


def test_a_role_binding_grants_a_cluster_role_in_its_namespace_only_and_never_cluster_scoped_resources() -> None:
    policy = RBACPolicy(
        [
            cluster_role("reader", {"apiGroups": [""], "resources": ["pods", "nodes"], "verbs": ["list"]}),
            binding("RoleBinding", "b", ("ClusterRole", "reader"), namespace="team-a"),
        ]
    )
    assert allowed(policy, ALICE, "GET", "/api/v1/namespaces/team-a/pods")
    assert not allowed(policy, ALICE, "GET", "/api/v1/namespaces/team-b/pods")
    assert not allowed(policy, ALICE, "GET", "/api/v1/pods")  # every namespace: cluster scope
    assert not allowed(policy, ALICE, "GET", "/api/v1/nodes")


def test_a_cluster_role_binding_grants_everywhere_and_a_role_only_where_it_lives() -> None:
    policy = RBACPolicy(
        [
            cluster_role("reader", {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}),
            binding(
                "ClusterRoleBinding", "everywhere", ("ClusterRole", "reader"), subject={"kind": "Group", "name": "team"}
            ),
            role("writer", "team-a", {"apiGroups": [""], "resources": ["pods"], "verbs": ["delete"]}),
            binding("RoleBinding", "w", ("Role", "writer"), namespace="team-a"),
        ]
    )
    assert allowed(policy, ALICE, "GET", "/api/v1/pods")
    assert allowed(policy, ALICE, "GET", "/api/v1/namespaces/team-b/pods")
    assert allowed(policy, ALICE, "DELETE", "/api/v1/namespaces/team-a/pods/p")
    assert not allowed(policy, ALICE, "DELETE", "/api/v1/namespaces/team-b/pods/p")
    assert not allowed(policy, authenticated("bob"), "GET", "/api/v1/pods")


def test_service_account_subjects_match_the_account_user_in_its_namespace() -> None:
    policy = RBACPolicy(
        [
            cluster_role("reader", {"apiGroups": [""], "resources": ["pods"], "verbs": ["watch"]}),
            binding(
                "ClusterRoleBinding",
                "b",
                ("ClusterRole", "reader"),
                subject={"kind": "ServiceAccount", "name": "fw", "namespace": "ops"},
            ),
        ]
    )
    assert allowed(policy, service_account("ops", "fw"), "GET", "/api/v1/pods", watch="true")
    assert not allowed(policy, service_account("default", "fw"), "GET", "/api/v1/pods", watch="true")
    assert not allowed(policy, service_account("ops", "fw"), "GET", "/api/v1/pods")  # list is another verb


def test_non_resource_urls_match_exactly_or_by_prefix() -> None:
    authorizer = Authorizer([], lambda _ns, _name: None)
    assert authorizer.authorize(request_attributes(ANONYMOUS, "GET", "/healthz", {})).allowed
    assert not authorizer.authorize(request_attributes(ANONYMOUS, "GET", "/apis", {})).allowed
    assert authorizer.authorize(request_attributes(ALICE, "GET", "/apis/karpenter.sh", {})).allowed
    assert not authorizer.authorize(request_attributes(ALICE, "GET", "/metrics", {})).allowed
    assert authorizer.authorize(request_attributes(ADMIN, "DELETE", "/anything", {})).allowed


def test_a_binding_without_a_valid_role_ref_is_refused() -> None:
    bad = binding("ClusterRoleBinding", "b", ("Role", "r"))
    with pytest.raises(PolicyError, match="only refer to a ClusterRole"):
        RBACPolicy([bad])


def test_the_node_authorizer_lets_a_kubelet_write_only_its_own_node_and_pods() -> None:
    bound = {("default", "mine"): "n1", ("default", "theirs"): "n2"}
    authorizer = Authorizer([], lambda ns, name: bound.get((ns, name)))
    kubelet = node("n1")

    def may(method: str, path: str) -> bool:
        return authorizer.authorize(request_attributes(kubelet, method, path, {})).allowed

    assert may("GET", "/api/v1/pods")
    assert may("PATCH", "/api/v1/nodes/n1/status")
    assert not may("PATCH", "/api/v1/nodes/n2/status")
    assert may("PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1")
    assert not may("PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n2")
    assert may("PATCH", "/api/v1/namespaces/default/pods/mine/status")
    assert not may("PATCH", "/api/v1/namespaces/default/pods/theirs/status")
    assert may("DELETE", "/api/v1/namespaces/default/pods/mine")
    assert not may("DELETE", "/api/v1/namespaces/default/pods/theirs")
    assert not may("GET", "/api/v1/namespaces/default/secrets/s")
    assert not authorizer.authorize(
        request_attributes(authenticated("system:node:n1"), "GET", "/api/v1/pods", {})
    ).allowed


@pytest.mark.parametrize(
    ("method", "path", "query", "expected"),
    [
        ("GET", "/api/v1/pods", {"watch": "1"}, ("watch", "pods", "", "", "")),
        ("DELETE", "/api/v1/namespaces/ns/pods", {}, ("deletecollection", "pods", "", "ns", "")),
        ("POST", "/api/v1/namespaces/ns/pods/p/eviction", {}, ("create", "pods", "eviction", "ns", "p")),
        ("PUT", "/api/v1/namespaces/ns/finalize", {}, ("update", "namespaces", "finalize", "ns", "ns")),
        ("GET", "/api/v1/namespaces/ns", {}, ("get", "namespaces", "", "ns", "ns")),
        ("PATCH", "/apis/karpenter.sh/v1/nodeclaims/c/status", {}, ("patch", "nodeclaims", "status", "", "c")),
    ],
)
def test_request_attributes_read_a_path_as_the_api_server_does(
    method: str, path: str, query: dict[str, str], expected: tuple[str, ...]
) -> None:
    a = request_attributes(ALICE, method, path, query)
    assert a.resource_request
    assert (a.verb, a.resource, a.subresource, a.namespace, a.name) == expected


def test_a_denial_reads_as_the_api_servers_forbidden_status() -> None:
    evict = request_attributes(ALICE, "POST", "/api/v1/namespaces/default/pods/web-1/eviction", {})
    status = forbidden(evict).status()
    assert status["code"] == 403 and status["reason"] == "Forbidden"
    assert status["message"] == (
        'pods "web-1" is forbidden: User "alice" cannot create resource "pods/eviction" in API group "" '
        'in the namespace "default"'
    )
    assert status["details"] == {"name": "web-1", "kind": "pods"}
    listing = forbidden(request_attributes(ALICE, "GET", "/apis/karpenter.sh/v1/nodeclaims", {})).message
    assert listing == (
        'nodeclaims.karpenter.sh is forbidden: User "alice" cannot list resource "nodeclaims" in API group '
        '"karpenter.sh" at the cluster scope'
    )
    path = forbidden(Attributes(ALICE, "get", False, path="/metrics")).message
    assert path == 'forbidden: User "alice" cannot get path "/metrics"'


# --- this repository's manifests --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def shipped() -> Authorizer:
    return Authorizer(load_manifests(DEFAULT_RBAC), lambda _ns, _name: None)


@pytest.mark.parametrize(
    ("user", "method", "path", "expected"),
    [
        (FUNCTIONS, "PATCH", "/api/v1/nodes/n1", True),
        (FUNCTIONS, "POST", "/api/v1/namespaces/default/pods/p/eviction", True),
        (FUNCTIONS, "PATCH", "/apis/karpenter.sh/v1/nodeclaims/c/status", True),
        (FUNCTIONS, "GET", "/api/v1/namespaces/kube-system/services/kube-dns", True),
        (FUNCTIONS, "GET", "/api/v1/namespaces/kube-system/secrets", False),
        (FUNCTIONS, "DELETE", "/apis/karpenter.sh/v1/nodepools/default", False),
        (FORWARDER, "GET", "/api/v1/pods", True),
        (FORWARDER, "PATCH", "/api/v1/nodes/n1", False),
        (
            FORWARDER,
            "PUT",
            "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/serverless-karpenter-forwarder",
            True,
        ),
        (FORWARDER, "PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/someone-else", False),
    ],
)
def test_the_shipped_manifests(shipped: Authorizer, user: User, method: str, path: str, expected: bool) -> None:
    assert shipped.authorize(request_attributes(user, method, path, {})).allowed is expected


def test_the_functions_group_is_the_access_entries_group() -> None:
    from infra.constructs.cluster_access import KUBERNETES_GROUP

    assert KUBERNETES_GROUP in FUNCTIONS.groups
