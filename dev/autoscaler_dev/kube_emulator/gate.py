"""The emulator's front door, in the API server's filter order: authentication, impersonation, priority and
fairness, authorization. ``KubeApi`` calls the gate once per request before serving it; the gate either lets
it through (None) or answers it (401, 403, 429, or an access review).

Every denial and rejection is counted (``denied``, ``throttled``) and the first ones kept, for the embedded
world's summary. Direct store access by the world's actors is checked with :meth:`KubeGate.check`.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from autoscaler_dev.kube_emulator import bodies
from autoscaler_dev.kube_emulator.authentication import (
    ANONYMOUS,
    SERVICE_ACCOUNT_PREFIX,
    Authenticator,
    UnauthorizedError,
    User,
    authenticated,
    service_account,
)
from autoscaler_dev.kube_emulator.authorization import REVIEW_GROUP, REVIEWS, Authorizer, forbidden
from autoscaler_dev.kube_emulator.errors import ApiError
from autoscaler_dev.kube_emulator.flowcontrol import FlowControl
from autoscaler_dev.kube_emulator.request_info import Attributes, request_attributes

FIRST_DENIALS = 20
_JSON = "application/json"


@dataclass(frozen=True)
class Denial:
    user: str
    verb: str
    resource: str  # resource[/subresource] (group-qualified) or the path
    namespace: str
    name: str
    message: str

    def as_dict(self) -> dict[str, str]:
        return {k: v for k, v in vars(self).items() if v}


class KubeGate:
    def __init__(
        self,
        authenticator: Authenticator,
        authorizer: Authorizer | None = None,
        flow: FlowControl | None = None,
        on_denied: Callable[[Denial], None] | None = None,
    ) -> None:
        self.authenticator = authenticator
        self.authorizer = authorizer
        self.flow = flow
        self.on_denied = on_denied
        self.denied: Counter[str] = Counter()  # user -> requests refused with 403
        self.denials: list[Denial] = []  # the first FIRST_DENIALS

    @property
    def throttled(self) -> int:
        return sum(self.flow.throttled.values()) if self.flow is not None else 0

    async def __call__(self, request: web.BaseRequest) -> web.StreamResponse | None:
        try:
            user = self.authenticator.authenticate(request.headers.get("Authorization"))
        except UnauthorizedError:
            raise ApiError(401, "Unauthorized", "Unauthorized") from None
        user = self._impersonated(user, request)
        if self.flow is not None:
            retry_after = self.flow.admit(user)
            if retry_after is not None:
                raise ApiError(
                    429,
                    "TooManyRequests",
                    "Too many requests, please try again later.",
                    {"retryAfterSeconds": retry_after},
                    headers={"Retry-After": str(retry_after)},
                )
        attributes = request_attributes(user, request.method, request.path, request.query)
        self._authorize(attributes)
        if self.flow is not None:
            self.flow.finish(attributes.verb, self.flow.started())
        if self._is_review(attributes) and self.authorizer is not None:
            review = await _review_body(request)
            answer = self.authorizer.review(attributes.resource, review, attributes)
            return web.Response(body=json.dumps(answer).encode(), status=201, content_type=_JSON)
        return None

    def check(self, request: Attributes) -> None:
        """Authorize a request the world makes without HTTP (raises the 403 it would get)."""
        self._authorize(request)

    def _authorize(self, request: Attributes) -> None:
        if self.authorizer is None:
            return
        decision = self.authorizer.authorize(request)
        if decision.allowed:
            return
        error = forbidden(request, decision.reason)
        self._count(request, error.message)
        raise error

    def _count(self, request: Attributes, message: str) -> None:
        self.denied[request.user.name] += 1
        if request.resource_request:
            qualified = f"{request.resource}.{request.api_group}" if request.api_group else request.resource
            what = f"{qualified}/{request.subresource}" if request.subresource else qualified
        else:
            what = request.path
        denial = Denial(request.user.name, request.verb, what, request.namespace, request.name, message)
        if len(self.denials) < FIRST_DENIALS:
            self.denials.append(denial)
        if self.on_denied is not None:
            self.on_denied(denial)

    def _impersonated(self, user: User, request: web.BaseRequest) -> User:
        """The user an ``Impersonate-User`` / ``Impersonate-Group`` request acts as, once the caller is allowed to
        impersonate each of them."""
        name = request.headers.get("Impersonate-User", "")
        groups = request.headers.getall("Impersonate-Group", [])
        if not name and not groups:
            return user
        if not name:
            raise ApiError(400, "BadRequest", f"requested {groups} without impersonating a user")
        as_account = name.startswith(SERVICE_ACCOUNT_PREFIX) and name.count(":") == 3
        if as_account:
            namespace, account = name[len(SERVICE_ACCOUNT_PREFIX) :].split(":")
            self._authorize(_impersonate(user, "serviceaccounts", account, namespace))
        else:
            self._authorize(_impersonate(user, "users", name))
        for group in groups:
            self._authorize(_impersonate(user, "groups", group))
        if name == ANONYMOUS.name:
            return User(name, tuple(groups))
        if as_account:
            impersonated = service_account(namespace, account)
            return authenticated(impersonated.name, *impersonated.groups, *groups)
        return authenticated(name, *groups)

    @staticmethod
    def _is_review(request: Attributes) -> bool:
        return (
            request.resource_request
            and request.api_group == REVIEW_GROUP
            and request.resource in REVIEWS
            and request.verb == "create"
        )


async def _review_body(request: web.BaseRequest) -> dict[str, Any]:
    body = bodies.decode(await request.read(), request.headers.get("Content-Type", ""))
    if not isinstance(body, dict):
        raise ApiError(400, "BadRequest", "the request body must be a JSON object")
    return body


def _impersonate(user: User, resource: str, name: str, namespace: str = "") -> Attributes:
    return Attributes(user, "impersonate", True, api_version="v1", resource=resource, namespace=namespace, name=name)
