"""What the embedded world enforces on the functions' AWS calls, assembled: one AWS call gate (``aws_gate``) with
IAM (``autoscaler_dev.iam``, against the synthesized stack's roles), EC2's rate limits and every call's latency
(``ec2_limits``), each of which a run can switch off. ``autoscaler simulate`` and the e2e scenarios have them all on;
tests that build their own world have none unless they ask.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
from botocore.exceptions import ClientError

from autoscaler_dev.iam import template
from autoscaler_dev.iam.calls import LaunchTemplateFacts, ProfileFacts
from autoscaler_dev.iam.enforcer import IamEnforcer
from autoscaler_dev.iam.policy import Environment
from autoscaler_dev.world.aws_gate import AwsCall, AwsCallGate, Plug, Refusal
from autoscaler_dev.world.aws_world import ACCOUNT, CLUSTER, NODE_ROLE, REGION, AWSWorld
from autoscaler_dev.world.ec2_limits import Ec2RateLimits, Latency
from autoscaler_dev.world.stack import StackResources

# Errors as each service answers a denied call (EC2's query protocol has its own code).
_DENIED = {"ec2": (403, "UnauthorizedOperation"), "iam": (403, "AccessDenied"), "sqs": (403, "AccessDenied")}
_DENIED_OTHERWISE = (400, "AccessDeniedException")


@dataclass(frozen=True)
class GateSettings:
    iam: bool = True
    iam_template: Path | None = None  # default: the stack synthesized from this repository's infra/
    throttling: bool = True
    latency: bool = True

    @classmethod
    def off(cls) -> GateSettings:
        return cls(iam=False, throttling=False, latency=False)


def synth_context(node_role: str) -> dict[str, str]:
    """The stack as it would be deployed for the world's cluster: its name and its node role (the world's)."""
    return {"clusterName": CLUSTER, "nodeRoleArn": f"arn:aws:iam::{ACCOUNT}:role/{node_role}"}


def default_template() -> Path:
    """The stack synthesized from this repository's infra/ for the world (cached by its inputs' digest)."""
    return template.synthesized_path(synth_context(NODE_ROLE))


class MotoInventory:
    """The account's existing resources, read from moto with the world's own (ungated) clients."""

    def __init__(self, aws: AWSWorld) -> None:
        self._ec2, self._iam = aws.client("ec2"), aws.client("iam")

    def ec2_tags(self, resource_id: str) -> Mapping[str, str]:
        found = self._ec2.describe_tags(Filters=[{"Name": "resource-id", "Values": [resource_id]}])["Tags"]
        return {t["Key"]: t["Value"] for t in found}

    def launch_template(self, spec: Mapping[str, Any]) -> LaunchTemplateFacts | None:
        named = (
            {"LaunchTemplateId": spec["LaunchTemplateId"]}
            if spec.get("LaunchTemplateId")
            else {"LaunchTemplateName": spec.get("LaunchTemplateName", "")}
        )
        try:
            versions = self._ec2.describe_launch_template_versions(
                **named, Versions=[str(spec.get("Version") or "$Default")]
            )["LaunchTemplateVersions"]
        except ClientError:
            return None
        if not versions:
            return None
        template_id = versions[0]["LaunchTemplateId"]
        tags = self._ec2.describe_launch_templates(LaunchTemplateIds=[template_id])["LaunchTemplates"][0].get("Tags")
        return LaunchTemplateFacts(
            template_id, {t["Key"]: t["Value"] for t in tags or ()}, versions[0]["LaunchTemplateData"]
        )

    def instance_profile(self, name: str) -> ProfileFacts | None:
        try:
            profile = self._iam.get_instance_profile(InstanceProfileName=name)["InstanceProfile"]
        except ClientError:
            return None
        tags = profile.get("Tags", ())
        roles = tuple(role["Arn"] for role in profile.get("Roles", ()))
        return ProfileFacts(profile["Arn"], {t["Key"]: t["Value"] for t in tags}, roles)


class IamPlug:
    """IAM as the gate's plug: a denied call answers as the service answers it."""

    def __init__(self, enforcer: IamEnforcer) -> None:
        self.enforcer = enforcer

    def on_call(self, call: AwsCall) -> Refusal | None:
        denial = self.enforcer.authorize(call.caller, call.service, call.operation, call.params)
        if denial is None:
            return None
        status, code = _DENIED.get(call.service, _DENIED_OTHERWISE)
        return Refusal(status, code, denial.message(self.enforcer.principal(call.caller)))

    def on_attempt(self, call: AwsCall) -> Refusal | None:
        return None

    def on_response(self, call: AwsCall) -> None:
        return None


class WorldGates:
    """The gate of one run and what it counted."""

    def __init__(
        self,
        settings: GateSettings,
        aws: AWSWorld,
        stack: StackResources,
        *,
        now: Callable[[], float],
        advance_to: Callable[[float], None],
        seed: int = 0,
        kube_url: str = "",
    ) -> None:
        self.settings = settings
        self.iam: IamEnforcer | None = None
        self.limits: Ec2RateLimits | None = None
        self.latency: Latency | None = None
        plugs: list[Plug] = []
        if settings.iam:
            source = settings.iam_template
            stack_template = template.load(source or template.synthesized_path(synth_context(aws.role)))
            event_sources = {"provisioner": stack.provisioning.name, "interruption": stack.interruption.name}
            names = template.world_names(stack_template, stack.environment(aws, kube_url), event_sources)
            env = Environment(account=ACCOUNT, region=REGION)
            roles = template.StackRoles(stack_template, env, names)
            self.iam = IamEnforcer(roles, MotoInventory(aws), env)
            plugs.append(IamPlug(self.iam))
        if settings.throttling:
            self.limits = Ec2RateLimits(now)
            plugs.append(self.limits)
        if settings.latency:
            self.latency = Latency(now, advance_to, seed)
            plugs.append(self.latency)
        self.gate = AwsCallGate(plugs)

    def session(self, function: str) -> boto3.Session:
        return self.gate.session(function)

    def summary(self) -> dict[str, Any]:
        found: dict[str, Any] = {
            "iam_denied": self.iam.denied if self.iam else 0,
            "iam_denials": [d.to_dict() for d in self.iam.denials] if self.iam else [],
            "ec2_throttled": self.limits.throttled if self.limits else 0,
        }
        if self.limits and self.limits.by_operation:
            found["ec2_throttled_by_operation"] = dict(sorted(self.limits.by_operation.items()))
        if self.latency:
            found["aws_latency_seconds"] = round(self.latency.seconds, 1)
        found["aws_gates"] = (
            ", ".join(
                name for name, on in (("iam", self.iam), ("throttling", self.limits), ("latency", self.latency)) if on
            )
            or "off"
        )
        return found

    def invariants(self) -> dict[str, int]:
        """A denied call is a violation: in an account it is an outage."""
        return {"iam_call_denied": self.iam.denied if self.iam else 0}
