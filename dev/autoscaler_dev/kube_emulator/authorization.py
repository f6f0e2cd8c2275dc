"""Authorization as the API server runs it on EKS (``Node,RBAC``): the Node authorizer, then RBAC over the
bootstrap policy and the cluster's own RBAC objects; the 403 a denial answers; and the access reviews
(``SelfSubjectAccessReview``, ``SubjectAccessReview``) that ``kubectl auth can-i`` asks."""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable, Mapping
from importlib import resources
from typing import Any, Protocol

import yaml

from autoscaler_dev.kube_emulator.authentication import ANONYMOUS, authenticated
from autoscaler_dev.kube_emulator.errors import ApiError
from autoscaler_dev.kube_emulator.node_authorizer import NodeAuthorizer, PodNode
from autoscaler_dev.kube_emulator.rbac import Decision, Manifest, PolicyError, RBACPolicy
from autoscaler_dev.kube_emulator.request_info import Attributes

log = logging.getLogger(__name__)
REVIEW_GROUP = "authorization.k8s.io"
REVIEWS = ("selfsubjectaccessreviews", "subjectaccessreviews")


@functools.cache
def _bootstrap_text() -> str:
    return resources.files("autoscaler_dev.kube_emulator").joinpath("bootstrap_rbac.yaml").read_text()


def bootstrap_policy() -> list[Manifest]:
    """The roles and bindings every cluster starts with (``bootstrap_rbac.yaml``)."""
    return [d for d in yaml.safe_load_all(_bootstrap_text()) if d]


class StoredRBAC(Protocol):
    """The RBAC objects applied through the API, and a token that changes whenever one of them does."""

    def version(self) -> object: ...

    def manifests(self) -> Iterable[Manifest]: ...


class Authorizer:
    """``Node,RBAC`` over the bootstrap policy, the ``manifests`` given (the installation's RBAC, as if applied
    before the world started) and, when ``stored`` is given, the RBAC objects applied through the API since: the
    policy is rebuilt when their version changes, so a binding created or deleted takes effect at the next request
    as it does in an API server."""

    def __init__(self, manifests: Iterable[Manifest], pod_node: PodNode, stored: StoredRBAC | None = None) -> None:
        self._given = list(manifests)
        self._stored = stored
        self._seen: object = None
        self.policy = RBACPolicy(bootstrap_policy()).add(self._given)
        self.node = NodeAuthorizer(pod_node)

    def authorize(self, request: Attributes) -> Decision:
        return self.node.authorize(request) or self._current().authorize(request)

    def _current(self) -> RBACPolicy:
        if self._stored is not None and (version := self._stored.version()) != self._seen:
            self._seen = version
            policy = RBACPolicy(bootstrap_policy()).add(self._given)
            for manifest in self._stored.manifests():
                try:
                    policy.add([manifest])
                except PolicyError as error:  # the object grants nothing, as an API server would never store it
                    log.warning("RBAC object ignored: %s", error)
            self.policy = policy
        return self.policy

    def review(self, resource: str, review: Mapping[str, Any], caller: Attributes) -> dict[str, Any]:
        """Answer an access review: for the caller itself (self) or for the user it names."""
        spec = review.get("spec") or {}
        user = caller.user
        if resource == "subjectaccessreviews":
            name = str(spec.get("user") or "")
            user = authenticated(name, *(spec.get("groups") or ())) if name else ANONYMOUS
        decision = self.authorize(asked(spec, user))
        status: dict[str, Any] = {"allowed": decision.allowed}
        if decision.reason:
            status["reason"] = decision.reason
        kind = "SelfSubjectAccessReview" if resource == "selfsubjectaccessreviews" else "SubjectAccessReview"
        return {
            "kind": kind,
            "apiVersion": f"{REVIEW_GROUP}/v1",
            "metadata": {"creationTimestamp": None, **(review.get("metadata") or {})},
            "spec": spec,
            "status": status,
        }


def asked(spec: Mapping[str, Any], user: Any) -> Attributes:
    """The request an access review's spec describes."""
    if spec.get("nonResourceAttributes"):
        attrs = spec["nonResourceAttributes"]
        return Attributes(user, str(attrs.get("verb") or ""), False, path=str(attrs.get("path") or ""))
    attrs = spec.get("resourceAttributes") or {}
    return Attributes(
        user,
        str(attrs.get("verb") or ""),
        True,
        api_group=str(attrs.get("group") or ""),
        api_version=str(attrs.get("version") or ""),
        resource=str(attrs.get("resource") or ""),
        subresource=str(attrs.get("subresource") or ""),
        namespace=str(attrs.get("namespace") or ""),
        name=str(attrs.get("name") or ""),
    )


def forbidden(request: Attributes, reason: str = "") -> ApiError:
    """The API server's 403 for a denied request: ``<resource> "<name>" is forbidden: User "..." cannot ...``."""
    who = f"User {_quoted(request.user.name)} cannot {request.verb}"
    if not request.resource_request:
        return ApiError(403, "Forbidden", f"forbidden: {who} path {_quoted(request.path)}{_suffix(reason)}")
    resource = f"{request.resource}/{request.subresource}" if request.subresource else request.resource
    where = f"in the namespace {_quoted(request.namespace)}" if request.namespace else "at the cluster scope"
    why = f"{who} resource {_quoted(resource)} in API group {_quoted(request.api_group)} {where}{_suffix(reason)}"
    qualified = f"{request.resource}.{request.api_group}" if request.api_group else request.resource
    subject = f"{qualified} {_quoted(request.name)}" if request.name else qualified
    details = {k: v for k, v in (("name", request.name), ("group", request.api_group), ("kind", request.resource)) if v}
    return ApiError(403, "Forbidden", f"{subject} is forbidden: {why}", details)


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _suffix(reason: str) -> str:
    return f": {reason}" if reason else ""
