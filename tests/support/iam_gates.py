"""The synthesized stack's IAM, enforced on a function's AWS clients in the embedded world, and copies of the stack
with a permission taken away (every enforcement test takes one away and sees the denial)."""

from __future__ import annotations

import copy
import json
from typing import Any

from autoscaler.providers.aws.clients import AWSClients
from autoscaler_dev.iam import template
from autoscaler_dev.iam.enforcer import IamEnforcer
from autoscaler_dev.iam.policy import Environment
from autoscaler_dev.iam.template import StackRoles, world_names
from autoscaler_dev.world.aws_gate import AwsCallGate
from autoscaler_dev.world.aws_world import ACCOUNT, NODE_ROLE, REGION, AWSWorld
from autoscaler_dev.world.gates import IamPlug, MotoInventory, synth_context

ENV = Environment(account=ACCOUNT, region=REGION)


def synthesized() -> dict[str, Any]:
    """The stack as deployed for the world's cluster (synthesized once per digest of infra/)."""
    return template.synthesized(synth_context(NODE_ROLE))


def gated(world: AWSWorld, stack: dict[str, Any], function: str) -> tuple[AWSClients, IamEnforcer]:
    """Clients that call as ``function``'s role of ``stack`` does, and the enforcer that judges them."""
    iam = IamEnforcer(StackRoles(stack, ENV, world_names(stack, {}, {})), MotoInventory(world), ENV)
    session = AwsCallGate([IamPlug(iam)]).session(function)
    return AWSClients(REGION, endpoint_url=world.endpoint, session=session), iam


def without_action(stack: dict[str, Any], function: str, action: str) -> dict[str, Any]:
    """``stack`` with ``action`` taken out of every policy statement attached to ``function``'s role."""
    cut = copy.deepcopy(stack)
    role = {"Ref": StackRoles(cut).role_ids[function]}
    removed = 0
    for resource in cut["Resources"].values():
        if resource["Type"] != "AWS::IAM::Policy" or role not in resource["Properties"].get("Roles", []):
            continue
        for statement in resource["Properties"]["PolicyDocument"]["Statement"]:
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            removed += action in actions
            statement["Action"] = [a for a in actions if a != action]
    assert removed, f"{function}'s role has no {action} to take away"
    return cut


def without_resource(stack: dict[str, Any], fragment: str) -> dict[str, Any]:
    """``stack`` with every statement's resources that contain ``fragment`` (``placement-group/*``) taken out."""
    cut = copy.deepcopy(stack)
    removed = 0
    for resource in cut["Resources"].values():
        if resource["Type"] != "AWS::IAM::Policy":
            continue
        for statement in resource["Properties"]["PolicyDocument"]["Statement"]:
            listed = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
            kept = [r for r in listed if fragment not in json.dumps(r)]
            removed += len(listed) - len(kept)
            statement["Resource"] = kept
    assert removed, f"no statement grants {fragment}"
    return cut
