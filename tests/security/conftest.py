"""The synthesized stack (once per session, offline) and the concrete ARNs the policy tests ask about.

Account, region and partition are fixed (``Environment``), so every ARN in the template resolves to one string
and requests can name real resources of this stack and made-up ones of "another" cluster, queue or table.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from autoscaler_dev.iam.policy import ALLOW, ContextValue, Environment, Request, Resolver, decide, role_statements
from infra.catalog import FUNCTIONS
from tests.infra.conftest import Synthesized, synthesize

ENV = Environment()
CLUSTER = "demo"
ROLES = (*FUNCTIONS, "forwarder")


@dataclass(frozen=True)
class Target:
    """One resource a call authorizes against, with the tags it already carries (aws:ResourceTag/...)."""

    arn: str
    tags: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Call:
    """An API call: IAM authorizes it once per resource it names, and it succeeds only if every one is allowed."""

    action: str
    targets: tuple[Target, ...]
    context: Mapping[str, ContextValue] = field(default_factory=dict)

    def requests(self) -> list[Request]:
        base: dict[str, ContextValue] = {"aws:RequestedRegion": ENV.region}
        return [
            Request(
                self.action,
                target.arn,
                {**base, **self.context, **{f"aws:ResourceTag/{k}": v for k, v in target.tags.items()}},
            )
            for target in self.targets
        ]


def call(action: str, *targets: Target | str, context: Mapping[str, ContextValue] | None = None) -> Call:
    return Call(action, tuple(t if isinstance(t, Target) else Target(t) for t in targets), context or {})


def request_tags(tags: Mapping[str, str]) -> dict[str, ContextValue]:
    """The context of a request that sets ``tags``: each as aws:RequestTag/<key>, and their keys as aws:TagKeys."""
    return {**{f"aws:RequestTag/{k}": v for k, v in tags.items()}, "aws:TagKeys": list(tags)}


@dataclass
class Account:
    """The stack as deployed into ``ENV``: role statements resolved and the ARNs of its queues, table, bus."""

    synth: Synthesized
    template: dict[str, Any]

    def role_id(self, role: str) -> str:
        stack = self.synth.stack
        construct = stack.access.forwarder_role if role == "forwarder" else stack.functions[role].role
        return self.synth.logical_id(construct)

    def statements(self, role: str) -> list[Any]:
        return role_statements(self.template, self.role_id(role), ENV)

    def arn(self, construct: Any) -> str:
        return Resolver(self.template, ENV).arn(self.synth.logical_id(construct))

    def allowed(self, role: str, c: Call) -> bool:
        statements = self.statements(role)
        return all(decide(statements, request) == ALLOW for request in c.requests())

    # the stack's own resources
    @property
    def interruption_queue(self) -> str:
        return self.arn(self.synth.stack.interruption.queue)

    @property
    def interruption_dlq(self) -> str:
        return self.arn(self.synth.stack.interruption.dead_letters)

    @property
    def provisioning_queue(self) -> str:
        return self.arn(self.synth.stack.cluster_events.provisioning_queue)

    @property
    def table(self) -> str:
        return self.arn(self.synth.stack.table)

    @property
    def bus(self) -> str:
        return self.arn(self.synth.stack.cluster_events.bus)

    @property
    def node_role(self) -> str:
        return self.arn(self.synth.stack.node_role.role)

    def log_stream(self, function: str) -> str:
        group = self.arn(self.synth.stack.functions[function].log_group).removesuffix(":*")
        return f"{group}:log-stream:2026/01/01/[$LATEST]0123"


@pytest.fixture(scope="session")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Synthesized]:
    yield synthesize(tmp_path_factory.mktemp("synth-security"), {"clusterName": CLUSTER})


@pytest.fixture(scope="session")
def account(synth: Synthesized) -> Account:
    return Account(synth, synth.template)
