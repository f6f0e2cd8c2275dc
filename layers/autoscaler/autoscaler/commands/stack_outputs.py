"""The stack's outputs, which the cluster side of an installation is rendered from (``autoscaler manifests``) and
checked against (``autoscaler doctor``): ``--stack-outputs FILE`` as ``cdk deploy --outputs-file`` writes it, or
``--from-stack NAME`` read with CloudFormation's DescribeStacks."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class StackOutputsError(ValueError):
    """The outputs cannot be read, or lack a key a command needs; the message says which and how to get it."""


@dataclass(frozen=True)
class StackOutputs:
    source: str  # where they were read, for messages
    values: Mapping[str, str]

    def __getitem__(self, key: str) -> str:
        try:
            return self.values[key]
        except KeyError:
            raise StackOutputsError(
                f"{self.source} has no output {key}: deploy this version of the stack first (`make deploy`)"
            ) from None

    def get(self, key: str, default: str = "") -> str:
        return self.values.get(key, default)


def add_source_options(parser: argparse.ArgumentParser) -> Any:
    """``--from-stack NAME`` or ``--stack-outputs FILE``, one of them required (the group: a command may add
    another source to it)."""
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--from-stack", metavar="NAME", help="read the outputs of this CloudFormation stack (DescribeStacks)"
    )
    source.add_argument(
        "--stack-outputs",
        metavar="FILE",
        help="read them from `cdk deploy --outputs-file FILE` (or a flat JSON object)",
    )
    return source


def from_file(path: str | Path) -> StackOutputs:
    """``{"<stack>": {key: value}}`` as the CDK CLI writes it (one stack), or a flat ``{key: value}``."""
    file = Path(path)
    if not file.exists():
        raise StackOutputsError(f'the path "{path}" does not exist')
    try:
        data = json.loads(file.read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise StackOutputsError(f"{path}: not a JSON outputs file: {error}") from error
    if not isinstance(data, dict):
        raise StackOutputsError(f"{path}: expected a JSON object of outputs")
    nested = {name: body for name, body in data.items() if isinstance(body, dict)}
    if len(nested) > 1:
        raise StackOutputsError(f"{path} holds several stacks ({', '.join(sorted(nested))}): keep only one")
    values = next(iter(nested.values())) if nested else data
    return StackOutputs(str(path), {str(key): str(value) for key, value in values.items()})


def from_stack(name: str, cloudformation: Any) -> StackOutputs:
    """The outputs of stack ``name`` through a boto3 CloudFormation client."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        stacks = cloudformation.describe_stacks(StackName=name)["Stacks"]
    except ClientError as error:
        raise StackOutputsError(f"stack {name}: {error.response['Error'].get('Message', error)}") from error
    except BotoCoreError as error:
        raise StackOutputsError(f"stack {name}: {error}") from error
    outputs = stacks[0].get("Outputs", []) if stacks else []
    return StackOutputs(f"stack {name}", {item["OutputKey"]: item["OutputValue"] for item in outputs})


def read(args: argparse.Namespace, session: Any = None) -> StackOutputs:
    """The outputs named by ``add_source_options``' arguments (``session``: a boto3 session, for tests)."""
    if args.stack_outputs:
        return from_file(args.stack_outputs)
    import boto3

    return from_stack(args.from_stack, (session or boto3.Session()).client("cloudformation"))
