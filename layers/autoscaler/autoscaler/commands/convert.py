"""``autoscaler convert -f FILE... [-o yaml|json]``: v1beta1 manifests as v1, offline, with what to decide.

Every document is printed in input order: NodePools, NodeClaims and EC2NodeClasses converted to v1 (v1
ones validated and kept), anything else unchanged. Before each object that needs a decision, a warning
block says what and why (YAML comments; on stderr with ``-o json``). Exit 1 when an object does not
convert (its error names the field) or a file does not read.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from typing import Any

from autoscaler.commands.manifest_args import add_manifest_arguments, manifest_documents
from autoscaler.manifests import dump_manifest
from autoscaler.migration import advice
from autoscaler.migration.inventory import KarpenterObject, take_inventory


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("convert", help="convert Karpenter v1beta1 manifests to v1, with warnings")
    add_manifest_arguments(parser, "YAML files or directories of them (repeatable)", required=True)
    parser.add_argument("-o", "--output", choices=("yaml", "json"), default="yaml")
    parser.set_defaults(run=run)


def _comment(subject: str, warnings: list[str]) -> str:
    lines = [f"# WARNING {subject}:"]
    for warning in warnings:
        lines += textwrap.wrap(
            warning,
            width=110,
            initial_indent="#   - ",
            subsequent_indent="#     ",
            break_on_hyphens=False,
            break_long_words=False,
        )
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> int:
    documents = manifest_documents(args)
    if not documents:
        print("error: no manifests found", file=sys.stderr)
        return 1
    inventory = take_inventory(documents)
    by_origin: dict[str, KarpenterObject] = {o.origin: o for o in inventory.objects}
    outputs: list[tuple[dict[str, Any], str, list[str]]] = []  # (object, subject, warnings)
    errors = 0
    for document in documents:
        obj = by_origin.get(document.origin)
        if document.problem:
            print(f"error: {document.problem}", file=sys.stderr)
            errors += 1
        elif obj is None:
            body = document.body
            subject = f"{body.get('kind')}/{(body.get('metadata') or {}).get('name', '')}"
            outputs.append((body, subject, advice.workload_warnings(body)))
        elif obj.v1 is None:
            print(f"error: {obj.origin}: {obj.error}", file=sys.stderr)
            errors += 1
        else:
            body = obj.v1.to_dict() if obj.converted else dict(obj.raw)
            outputs.append((body, obj.subject, advice.object_warnings(obj)))

    if args.output == "json":
        for _, subject, warnings in outputs:
            for warning in warnings:
                print(f"warning: {subject}: {warning}", file=sys.stderr)
        print(json.dumps({"apiVersion": "v1", "kind": "List", "items": [o for o, _, _ in outputs]}, indent=2))
    else:
        blocks = [
            (_comment(subject, warnings) if warnings else "") + dump_manifest(body)
            for body, subject, warnings in outputs
        ]
        print("---\n".join(blocks), end="")
    converted = sum(o.converted and o.v1 is not None for o in inventory.objects)
    warned = sum(1 for _, _, w in outputs if w)
    print(f"{converted} converted from v1beta1, {warned} with warnings, {errors} errors", file=sys.stderr)
    return 1 if errors else 0
