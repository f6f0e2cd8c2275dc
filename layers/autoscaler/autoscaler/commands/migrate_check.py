"""``autoscaler migrate-check -f FILE... [--iam-policy FILE] [--helm-values FILE] [-o json]``.

Prints the pre-upgrade checklist of Karpenter's v1 migration with a finding per object that needs a
decision. Exit 0 when nothing needs attention, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

import yaml

from autoscaler.commands.manifest_args import add_manifest_arguments, manifest_documents
from autoscaler.migration.checklist import Inputs, Item, Source, checklist
from autoscaler.migration.iam import PolicyFileError, parse_policy
from autoscaler.migration.inventory import take_inventory

_MARKS = {"ok": "[OK]       ", "attention": "[ATTENTION]", "skipped": "[SKIPPED]  "}


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("migrate-check", help="the pre-upgrade checklist for moving off Karpenter v1beta1")
    add_manifest_arguments(parser, "manifests: YAML files or directories of them (repeatable)", required=True)
    parser.add_argument("--iam-policy", action="append", metavar="FILE", help="IAM policy JSON (repeatable)")
    parser.add_argument("--helm-values", metavar="FILE", help="the values file of your Karpenter Helm release")
    parser.add_argument("-o", "--output", choices=("text", "json"), default="text")
    parser.set_defaults(run=run)


def _policy(path: str) -> Source:
    try:
        return Source(path, parse_policy(Path(path).read_text()))
    except (OSError, PolicyFileError) as error:
        return Source(path, error=f"cannot read IAM policy: {error}")


def _helm_values(path: str) -> Source:
    try:
        values = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as error:
        return Source(path, error=f"cannot read Helm values: {str(error).splitlines()[0]}")
    if values is not None and not isinstance(values, dict):
        return Source(path, error="Helm values must be a YAML mapping")
    return Source(path, values or {})


def _print_text(items: list[Item], objects: int) -> None:
    print(f"Pre-upgrade checklist for Karpenter v1 ({objects} Karpenter objects read)\n")
    for item in items:
        print(f"{_MARKS[item.status]} {item.title}")
        if item.skipped:
            print(f"              {item.skipped}")
        for finding in item.findings:
            print(f"  - {finding.subject} ({finding.origin}): {finding.message}")
    attention = sum(item.status == "attention" for item in items)
    print(f"\n{attention} of {len(items)} items need attention." if attention else "\nNothing needs attention.")


def run(args: argparse.Namespace) -> int:
    inventory = take_inventory(manifest_documents(args))
    policies = [_policy(p) for p in args.iam_policy] if args.iam_policy else None
    helm_values = _helm_values(args.helm_values) if args.helm_values else None
    items = checklist(Inputs(inventory, policies, helm_values))
    if args.output == "json":
        payload = {
            "attention": sum(item.status == "attention" for item in items),
            "items": [{**asdict(item), "status": item.status} for item in items],
        }
        print(json.dumps(payload, indent=2))
    else:
        _print_text(items, len(inventory.objects))
    if not inventory.objects and not inventory.others:
        print("error: no manifests found", file=sys.stderr)
        return 1
    return 1 if any(item.status == "attention" for item in items) else 0
