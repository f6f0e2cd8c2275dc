"""Authorizes each AWS call of a function against that function's role, fail-closed, and keeps the denials.

Everything IAM would evaluate for the call (``calls.requests_of``: its resources, tags, implied actions) must be
allowed; the first request that is not is the denial, with the statements that came closest and why they did not
match (``policy.explain``). A call whose authorization is not modelled, or a policy the evaluator cannot read, is
denied as well, saying so: the world never lets through what it cannot judge.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from autoscaler_dev.iam.calls import Inventory, NotModelled, requests_of
from autoscaler_dev.iam.policy import ALLOW, Environment, PolicyError, decide, explain
from autoscaler_dev.iam.template import StackRoles

FIRST_DENIALS = 10  # kept in full for the summary; the rest are counted


@dataclass(frozen=True)
class Denial:
    function: str
    action: str
    resource: str
    missing: str  # which statement was missing, or did not match and why

    def message(self, principal: str) -> str:
        return (
            f"User: {principal} is not authorized to perform: {self.action} on resource: {self.resource} "
            f"({self.missing})"
        )

    def to_dict(self) -> dict[str, str]:
        return {"function": self.function, "action": self.action, "resource": self.resource, "missing": self.missing}


class IamEnforcer:
    def __init__(self, roles: StackRoles, inventory: Inventory, env: Environment) -> None:
        self.roles, self.inventory, self.env = roles, inventory, env
        self.denied = 0
        self.denials: list[Denial] = []  # the first FIRST_DENIALS
        self.by_action: Counter[str] = Counter()
        self.calls: Counter[str] = Counter()  # every call judged, by function:service:Operation
        self._lock = threading.Lock()  # functions call from worker threads (tagging, writes a few at a time)

    def principal(self, function: str) -> str:
        role = self.roles.role_name(function) if function in self.roles.role_ids else "unknown"
        return f"arn:{self.env.partition}:sts::{self.env.account}:assumed-role/{role}/{function}"

    def authorize(self, function: str, service: str, operation: str, params: Mapping[str, Any]) -> Denial | None:
        """None when IAM allows the call; else the (recorded) denial."""
        denial = self._judge(function, service, operation, params)
        with self._lock:
            self.calls[f"{function}:{service}:{operation}"] += 1
            if denial is not None:
                self.denied += 1
                self.by_action[denial.action] += 1
                if len(self.denials) < FIRST_DENIALS:
                    self.denials.append(denial)
        return denial

    def _judge(self, function: str, service: str, operation: str, params: Mapping[str, Any]) -> Denial | None:
        action = f"{service}:{operation}"
        if function not in self.roles.role_ids:
            return Denial(function, action, "*", f"the template has no function {function} (so no role)")
        try:
            statements = self.roles.statements(function)
            for request in requests_of(service, operation, params, self.env, self.inventory):
                if decide(statements, request) != ALLOW:
                    return Denial(function, request.action, request.resource, explain(statements, request))
        except (NotModelled, PolicyError) as error:
            return Denial(function, action, "*", f"denied, not judged: {error}")
        return None
