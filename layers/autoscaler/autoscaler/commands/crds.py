"""``autoscaler crds [--out DIR] [--conversion-webhook URL]``: write the CRDs generated from the models."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("crds", help="write the NodePool, NodeClaim and EC2NodeClass CRDs")
    parser.add_argument("--out", default="infra/manifests/crds", help="directory to write the CRDs to")
    parser.add_argument(
        "--conversion-webhook",
        metavar="URL",
        help="also serve v1beta1, converted by the conversion function at this https URL (its function URL)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from autoscaler.crds import write_crds
    from autoscaler.crds.conversion import check_webhook_url

    if args.conversion_webhook is not None:
        try:
            check_webhook_url(args.conversion_webhook)
        except ValueError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
    for path in write_crds(Path(args.out), args.conversion_webhook):
        print(f"wrote {path}")
    return 0
