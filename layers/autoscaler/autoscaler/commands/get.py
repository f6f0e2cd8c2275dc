"""``autoscaler get FILE...``: list manifests as ``kubectl get`` would, with the CRDs' printer columns."""

from __future__ import annotations

import argparse
from typing import Any

from autoscaler.apis.validation import InvalidObjectError, parse
from autoscaler.commands.manifest_args import add_manifest_arguments, manifest_documents
from autoscaler.crds.columns import format_table, table_rows
from autoscaler.crds.generate import CRD_KINDS


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("get", help="list manifests with kubectl's columns (after defaulting)")
    add_manifest_arguments(parser, "YAML files or directories of them (repeatable)", required=True)
    parser.add_argument("-o", "--output", choices=("table", "wide"), default="table")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for document in manifest_documents(args):
        try:
            obj = parse(document.body)
        except InvalidObjectError:
            continue  # `autoscaler validate` says why; `get` lists what the API server would store
        body = obj.to_dict()
        by_kind.setdefault(body["kind"], []).append(body)
    for crd in CRD_KINDS:
        objects = by_kind.get(crd.kind)
        if not objects:
            continue
        headers, rows = table_rows(objects, crd.printer_columns, wide=args.output == "wide")
        print(f"# {crd.plural}.{crd.group}")
        print(format_table(headers, rows))
        print()
    return 0
