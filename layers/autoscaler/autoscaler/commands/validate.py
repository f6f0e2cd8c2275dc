"""``autoscaler validate FILE...``: check manifests as the API server (and Karpenter) would."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict, dataclass, field
from typing import Any

from autoscaler.apis.validation import FieldError, InvalidObjectError, parse
from autoscaler.kube.objects import Body
from autoscaler.manifests import Document, load_documents


@dataclass
class Verdict:
    origin: str
    kind: str
    name: str
    errors: list[FieldError] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        return not self.errors


def judge(document: Document) -> Verdict:
    body = document.body if isinstance(document.body, dict) else {}
    view = Body(body)
    kind, name = view.kind, view.name
    if document.error is not None:
        return Verdict(document.origin, kind, name, [FieldError("", "yaml", document.error)])
    try:
        parse(document.body)
    except InvalidObjectError as error:
        return Verdict(document.origin, error.kind or kind, error.name or name, error.errors)
    return Verdict(document.origin, kind, name)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("validate", help="validate NodePool, NodeClaim and EC2NodeClass manifests")
    parser.add_argument("files", nargs="+", help="YAML files or directories of them")
    parser.add_argument("-o", "--output", choices=("text", "json"), default="text")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    verdicts = [judge(d) for d in load_documents(args.files)]
    if args.output == "json":
        print(json.dumps([{**asdict(v), "valid": v.valid} for v in verdicts], indent=2))
    else:
        for verdict in verdicts:
            title = f"{verdict.kind}/{verdict.name}" if verdict.kind else "(unknown object)"
            if verdict.valid:
                print(f"OK       {title}  ({verdict.origin})")
                continue
            print(f'INVALID  {title}  ({verdict.origin}): The {verdict.kind} "{verdict.name}" is invalid:')
            for error in verdict.errors:
                print(f"  * {error}")
                print(f"      rule: {error.rule}")
        invalid = sum(not v.valid for v in verdicts)
        print(f"\n{len(verdicts)} objects, {len(verdicts) - invalid} valid, {invalid} invalid")
    if not verdicts:
        print("no objects found")
        return 1
    return 1 if any(not v.valid for v in verdicts) else 0
