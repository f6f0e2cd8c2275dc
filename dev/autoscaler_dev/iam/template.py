"""The stack's IAM as it would be deployed: its synthesized template, from a file or synthesized from this
repository's ``infra/`` (cached under ``build/iam/`` by a digest of everything synth reads, so a run pays for
``cdk synth`` only after a change), and each function's role statements resolved to concrete ARNs.

The template names the stack's queues and table by logical id; the embedded world created them under names of its
own. :func:`world_names` binds the two through what the functions are given: each function's environment variables
(``STATE_TABLE_NAME``, ``INTERRUPTION_DLQ_URL``, ...) and its event source mappings (the queue it consumes).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from autoscaler_dev.iam.policy import Environment, PolicyError, Resolver, role_statements

REPO = Path(__file__).resolve().parents[3]
CORE = "layers/autoscaler/autoscaler"  # the CDK app imports some of its top-level modules (routing, settings, ...)


class TemplateError(Exception):
    """No template to enforce: the file is missing or unreadable, or synth failed (its output is the message)."""


def load(path: Path) -> dict[str, Any]:
    try:
        template = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise TemplateError(f"cannot read the IAM template {path}: {error}") from error
    if not isinstance(template, dict) or not isinstance(template.get("Resources"), dict):
        raise TemplateError(f"{path} is not a CloudFormation template (no Resources)")
    return template


def inputs_digest(context: Mapping[str, Any], root: Path = REPO) -> str:
    """A digest of every file synth reads (infra/'s sources, cdk.json, the core modules infra imports, the
    functions' folders) and of the context."""
    digest = hashlib.sha256(json.dumps(dict(context), sort_keys=True).encode())
    files = [root / "cdk.json", *sorted((root / "infra").rglob("*.py")), *sorted((root / CORE).glob("*.py"))]
    files += sorted((root / "functions").glob("*/handler.py"))
    for path in files:
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes() if path.is_file() else b"-")
    return digest.hexdigest()[:20]


def synthesized(context: Mapping[str, Any], root: Path = REPO, cache: Path | None = None) -> dict[str, Any]:
    """The template of ``root``'s stack for ``context``, synthesized once per digest of its inputs."""
    return load(synthesized_path(context, root, cache))


def synthesized_path(context: Mapping[str, Any], root: Path = REPO, cache: Path | None = None) -> Path:
    """Where that template is cached, after synthesizing it when it is not."""
    if not (root / "infra" / "app.py").is_file():
        raise TemplateError(f"no infra/ in {root} to synthesize: give a template (--iam-template PATH)")
    cache = cache or root / "build" / "iam"
    cached = cache / f"template-{inputs_digest(context, root)}.json"
    if not cached.is_file():
        cache.mkdir(parents=True, exist_ok=True)
        partial = cached.with_suffix(f".{os.getpid()}.partial")  # runs side by side (--jobs) may both synth
        done = subprocess.run(
            [sys.executable, "-m", "autoscaler_dev.iam.synth", json.dumps(dict(context)), str(partial)],
            cwd=root,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise TemplateError(f"cdk synth failed:\n{done.stderr[-4000:]}")
        partial.replace(cached)  # atomic: no run reads half a file
    return cached


def _function_name(resource: Mapping[str, Any]) -> str | None:
    handler = resource.get("Properties", {}).get("Handler", "")
    return handler.split("/", 1)[0] if isinstance(handler, str) and handler.endswith("/handler.handler") else None


def _logical_ref(value: Any) -> str | None:
    if isinstance(value, dict) and set(value) == {"Ref"}:
        return str(value["Ref"])
    if isinstance(value, dict) and set(value) == {"Fn::GetAtt"}:
        return str(value["Fn::GetAtt"][0])
    return None


def world_names(
    template: Mapping[str, Any], environment: Mapping[str, str], event_sources: Mapping[str, str]
) -> dict[str, str]:
    """logical id -> the name the world gave that resource: a function's environment variable that refers to a
    resource is bound to the world's value of that variable (a queue URL's last segment, a table's name), and the
    queue of a function's event source mapping to ``event_sources[function]``."""
    resources: Mapping[str, Any] = template["Resources"]
    names: dict[str, str] = {}
    functions: dict[str, str] = {}  # logical id of a function or of its alias -> function name
    for logical_id, resource in resources.items():
        if resource["Type"] == "AWS::Lambda::Function" and (name := _function_name(resource)):
            functions[logical_id] = name
            variables = resource["Properties"].get("Environment", {}).get("Variables", {})
            for variable, value in variables.items():
                ref = _logical_ref(value)
                if ref is not None and ref in resources and variable in environment:
                    names[ref] = environment[variable].rstrip("/").rsplit("/", 1)[-1]
    for logical_id, resource in resources.items():
        if resource["Type"] == "AWS::Lambda::Alias":
            target = _logical_ref(resource["Properties"].get("FunctionName"))
            if target in functions:
                functions[logical_id] = functions[target]
    for resource in resources.values():
        if resource["Type"] == "AWS::Lambda::EventSourceMapping":
            properties = resource["Properties"]
            function = functions.get(_logical_ref(properties.get("FunctionName")) or "")
            queue = _logical_ref(properties.get("EventSourceArn"))
            if function is not None and function in event_sources and queue:
                names[queue] = event_sources[function]
    return names


@dataclass(frozen=True)
class StackRoles:
    """The identity statements of every function's role in one template, resolved in ``env`` with ``names``."""

    template: Mapping[str, Any]
    env: Environment = field(default_factory=Environment)
    names: Mapping[str, str] = field(default_factory=dict)

    @cached_property
    def role_ids(self) -> dict[str, str]:
        """function name -> the logical id of its execution role."""
        found = {}
        for resource in self.template["Resources"].values():
            if resource["Type"] == "AWS::Lambda::Function" and (name := _function_name(resource)):
                role = _logical_ref(resource["Properties"].get("Role"))
                if role is None:
                    raise PolicyError(f"the role of function {name} is not a reference: {resource['Properties']}")
                found[name] = role
        return found

    def statements(self, function: str) -> list[Any]:
        return self._statements[function]

    @cached_property
    def _statements(self) -> dict[str, list[Any]]:
        return {
            name: role_statements(self.template, role, self.env, self.names) for name, role in self.role_ids.items()
        }

    def role_name(self, function: str) -> str:
        return Resolver(self.template, self.env, self.names).physical_name(self.role_ids[function])
