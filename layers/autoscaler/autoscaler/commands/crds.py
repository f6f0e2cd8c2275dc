"""``autoscaler crds [--out DIR] [--conversion-webhook URL]``: the CRDs generated from the models, to stdout (for
``autoscaler crds | kubectl apply -f -``) or one file per kind into DIR (``make crds`` keeps infra/manifests/crds)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("crds", help="print (or write) the CRDs of every kind served")
    parser.add_argument("--out", metavar="DIR", help="write one file per CRD into this directory instead of stdout")
    parser.add_argument(
        "--conversion-webhook",
        metavar="URL",
        help="also serve v1beta1, converted by the conversion function at this https URL (its function URL)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from autoscaler.crds import CRD_KINDS, write_crds
    from autoscaler.crds.conversion import check_webhook_url
    from autoscaler.crds.render import render

    if args.conversion_webhook is not None:
        try:
            check_webhook_url(args.conversion_webhook)
        except ValueError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
    if args.out is None:
        sys.stdout.write("---\n".join(render(crd, args.conversion_webhook) for crd in CRD_KINDS))
        return 0
    for path in write_crds(Path(args.out), args.conversion_webhook):
        print(f"wrote {path}")
    return 0
